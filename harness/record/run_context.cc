// Context collection: each rank reports where it runs; rank 0 adds what is the same for all.
#include "harness/record/run_context.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <type_traits>

#include "collectives/topology.h"

#ifndef TPB_GIT_SHA
#define TPB_GIT_SHA "unknown"
#endif

extern "C" char* openblas_get_config(void);

namespace tpb {

namespace {

// The numeric part of a rank's report, gathered as bytes (ranks run one binary).
struct RankFixed {
  int64_t rank = 0, local_rank = 0, cpus_online = 0, local_size = 0;
};
static_assert(std::is_trivially_copyable_v<RankFixed>);

std::vector<ContextRankRecord> gather_ranks(const World& w) {
  const RankFixed mine{w.rank, w.local_rank, online_cpus(), w.local_size};
  const auto fixed = gather_bytes(w.comm, &mine, sizeof mine, 0);
  const auto hosts = gather_strings(w.comm, w.host, 0);
  // Placement is host-defined (what the OS tells about affinity), so it travels as JSON text.
  const auto placements = gather_strings(w.comm, detect_placement().dump(), 0);
  std::vector<ContextRankRecord> ranks;
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    RankFixed f;
    std::memcpy(&f, fixed[i].data(), sizeof f);
    ranks.push_back({f.rank, hosts[i], f.local_rank, nlohmann::ordered_json::parse(placements[i]),
                     f.cpus_online, f.local_size});
  }
  return ranks;
}

std::string utc_now() {
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return when;
}

nlohmann::ordered_json env_of_interest() {
  nlohmann::ordered_json env = nlohmann::ordered_json::object();
  for (const char* k :
       {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "CUDA_VISIBLE_DEVICES",
        "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE",
        "NCCL_NVLS_ENABLE", "OMPI_MCA_btl", "SLURM_JOB_ID"})
    if (const char* v = std::getenv(k)) env[k] = v;
  return env;
}

}  // namespace

VersionsRecord versions_record(const std::vector<std::string>& backends) {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string m(mpi, static_cast<std::size_t>(len));
  while (!m.empty() && (m.back() == '\n' || m.back() == '\0')) m.pop_back();
  return {TPB_VERSION, TPB_GIT_SHA, m, openblas_get_config(), __VERSION__, backends};
}

RunContextRecord collect_context(const World& w, const std::vector<std::string>& argv,
                                 const DeviceCaps& caps, const std::vector<std::string>& backends) {
  RunContextRecord c;
  c.ranks = gather_ranks(w);
  if (w.rank != 0) return c;
  std::set<std::string> hosts;
  for (const auto& r : c.ranks) {
    hosts.insert(r.host);
    c.ranks_per_core = std::max(
        c.ranks_per_core, static_cast<double>(r.local_size) / static_cast<double>(r.cpus_online));
  }
  c.date = utc_now();
  c.argv = argv;
  c.versions = versions_record(backends);
  c.hosts.assign(hosts.begin(), hosts.end());
  c.world_size = w.size;
  c.oversubscribed = c.ranks_per_core > 1.0;
  c.device = {caps.backend,      caps.name,      caps.device_timer, caps.timer_resolution_s,
              caps.memory_bytes, caps.llc_bytes, caps.llc_source};
  c.llc_bytes = caps.llc_bytes;
  c.env = env_of_interest();
  return c;
}

}  // namespace tpb
