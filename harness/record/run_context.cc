// Context collection.
#include "harness/record/run_context.h"

#include <mpi.h>

#include <cstdlib>
#include <ctime>
#include <set>

#include "collectives/topology.h"
#include "layers/device_factory.h"

#ifndef TPB_GIT_SHA
#define TPB_GIT_SHA "unknown"
#endif

extern "C" char* openblas_get_config(void);

namespace tpb {

nlohmann::ordered_json versions_json() {
  nlohmann::ordered_json v;
  v["tpbench"] = TPB_VERSION;
  v["git_sha"] = TPB_GIT_SHA;
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string m(mpi, static_cast<std::size_t>(len));
  while (!m.empty() && (m.back() == '\n' || m.back() == '\0')) m.pop_back();
  v["mpi"] = m;
  v["blas"] = openblas_get_config();
  v["compiler"] = __VERSION__;
  v["backends"] = built_backends();
  return v;
}

nlohmann::ordered_json collect_context(const World& w, const std::vector<std::string>& argv,
                                       const DeviceCaps& caps) {
  nlohmann::ordered_json mine;
  mine["rank"] = w.rank;
  mine["host"] = w.host;
  mine["local_rank"] = w.local_rank;
  mine["placement"] = detect_placement();
  mine["cpus_online"] = online_cpus();
  mine["local_size"] = w.local_size;
  auto all = gather_strings(w.comm, mine.dump(), 0);
  nlohmann::ordered_json c;
  if (w.rank != 0) return c;
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  std::set<std::string> hosts;
  double worst_rpc = 0;
  for (const auto& s : all) {
    auto j = nlohmann::ordered_json::parse(s);
    hosts.insert(j["host"].get<std::string>());
    worst_rpc = std::max(worst_rpc, j["local_size"].get<double>() / j["cpus_online"].get<double>());
    ranks.push_back(j);
  }
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c["date"] = when;
  c["argv"] = argv;
  c["versions"] = versions_json();
  c["hosts"] = std::vector<std::string>(hosts.begin(), hosts.end());
  c["world_size"] = w.size;
  c["ranks_per_core"] = worst_rpc;
  c["oversubscribed"] = worst_rpc > 1.0;
  c["device"] = {
      {"backend", caps.backend},           {"name", caps.name},
      {"device_timer", caps.device_timer}, {"timer_resolution_s", caps.timer_resolution_s},
      {"memory_bytes", caps.memory_bytes}, {"llc_bytes", caps.llc_bytes}};
  c["llc_bytes"] = caps.llc_bytes;
  nlohmann::ordered_json env;
  for (const char* k : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
                        "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
                        "NCCL_IB_DISABLE", "NCCL_NVLS_ENABLE", "OMPI_MCA_btl", "SLURM_JOB_ID"})
    if (const char* v = std::getenv(k)) env[k] = v;
  c["env"] = env;
  c["ranks"] = ranks;
  return c;
}

}  // namespace tpb
