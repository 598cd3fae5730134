// Which MPI thread level a command needs, decided from its config before MPI_Init.
// Open MPI turns its internal locking on at any level above MPI_THREAD_SINGLE (about 0.5 us of
// a 3 us 4 KB all-reduce on 2 ranks of one host), so tpbench asks for SINGLE unless the command
// starts helper threads: the mem_contend hog, the CUDA backend's NVML sampler and hog (and
// CUDA's and NCCL's own threads), BLAS threads past one. None of them calls MPI, so FUNNELED is
// enough for them. The hang watchdog and the host beacon tick on timer signals, not threads.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

// True when any point of the command may start a thread beside the main one. Errs towards
// true: a value it cannot read (it is judged later, with a proper message) counts as a need.
// `threaded` names the --backend and --collective values that start threads of their own
// (config/backend_traits.h helper_thread_names()).
struct ThreadedNames {
  std::vector<std::string> backends, collectives;
};
bool needs_helper_threads(const nlohmann::json& config, const ThreadedNames& threaded);

}  // namespace tpb
