// What a --backend name implies before any device exists: its defaults (collective, hardware
// profile, dtype) and which options it can honour. The devices themselves are made by the
// registry in harness/backends; this table is what config validation may know of them.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "collectives/mpi/mpi_mode.h"
#include "harness/config/config_fields.h"

namespace tpb {

struct BackendTraits {
  std::string name;                // "cpu" | "cuda" | "model"
  std::string default_collective;  // NCCL on a GPU, MPI elsewhere
  std::string default_hardware;    // the profile under configs/hardware/
  DType default_dtype = DType::fp32;
  bool device_memory = false;       // buffers live on the device (DeviceCaps::device_memory)
  bool device_collectives = false;  // --collective nccl
  bool clock_control = false;       // --inject sm_clock
  bool graphs = false;              // --cuda-graph
  // Virtual ranks in this process, priced by a model: no device, no MPI world, and the
  // backend's default collective is the only one it runs (and runs nowhere else).
  bool virtual_ranks = false;
  // Starts threads beside the main one (CUDA's and NVML's): MPI then needs FUNNELED.
  bool helper_threads = false;
  // Launches kernels by the CUDA backend's launch plan, so its steps have idle at kernel
  // boundaries (kernel_idle, whatif's fewer_kernels).
  bool launches_kernels = false;
  // Runs a library's attention kernels beside its own (--attention cudnn).
  bool library_attention = false;
  // The prefill prompts of calibrate's op profile. A GPU's prefill attention changes regime past
  // 512 (on the H200, its time per S^2 falls 3x from 512 to 4096), so no line through 128 and
  // 512 reaches a long prompt; a CPU core would take minutes a step there.
  std::vector<int64_t> profile_prompts = {128, 512};
};

// Every backend the CLI accepts, built into this binary or not (the registry says which are).
std::vector<std::string> backend_names();

// Throws BadInput("--backend: ...") for a name backend_names() does not hold.
const BackendTraits& backend_traits(const std::string& name);
// The same for a recorded name that may be any text: nullptr for one this build does not know.
const BackendTraits* find_backend_traits(const std::string& name);

// The --backend and --collective names whose runs start helper threads.
std::vector<std::string> helper_thread_backends();
std::vector<std::string> helper_thread_collectives();

// What a --collective name implies, so no caller tests the name itself.
struct CollectiveTraits {
  std::string name;  // "mpi" | "nccl" | "model"
  // MPI calls from the host: --mpi-mode applies, host buffers go straight to MPI, and a CUDA
  // graph cannot capture it (device data is staged through host memory).
  bool host_calls = false;
  bool device_only = false;     // needs a backend with device collectives
  bool helper_threads = false;  // NCCL's proxy threads
};

// Throws BadInput("--collective: ...") for a name the CLI does not accept.
const CollectiveTraits& collective_traits(const std::string& name);

// Whether --collective `name` is a virtual-ranks backend's own (the model collective).
bool virtual_collective(const std::string& name);

// The collective a run uses when --collective is not given; "mpi" for a name that is not a
// backend (validation rejects it later, naming --backend).
std::string default_collective(const std::string& backend);

// Where a spec runs, read alike by every verb: --config-dir (`default_config_dir` when not
// given), --backend, --collective (the backend's default; nccl only on a backend with device
// collectives) and --mpi-mode. Throws BadInput naming the flag.
struct BackendChoice {
  std::string config_dir, backend, collective;
  MpiMode mpi_mode = MpiMode::blocking;
};
BackendChoice choose_backend(ConfigFields& f, const std::string& default_config_dir);

// --world, --algo and --gpus-per-node: the model backend's virtual ranks, refused with real
// ranks (MPI decides their world). `default_world` < 1 means one node of the preset.
// --model-noise SEED:CV: each modelled compute segment takes (1 + CV x z) of its time, z a
// seeded standard normal per segment and rank (clamped at 5% of the time); "off" by default.
struct ModelWorld {
  int world = 0;              // virtual ranks (0: real ranks)
  std::string algo = "auto";  // ring | tree | nvls | auto
  int gpus_per_node = 0;      // ranks per node (the preset's by default)
  std::string noise = "off";  // as given: "off" or "SEED:CV"
  uint64_t noise_seed = 0;
  double noise_cv = 0;  // 0: no noise
};
ModelWorld resolve_model_world(ConfigFields& f, const std::string& backend, int mpi_world,
                               const std::string& topology, const std::string& config_dir,
                               int default_world);

// The model-only keys of a config echo (run's and collectives'), in the keys read above.
void echo_model_world(nlohmann::ordered_json& j, const ModelWorld& m);

}  // namespace tpb
