// Context collection: each rank reports where it runs; rank 0 adds what is the same for all.
#include "harness/record/run_context.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <type_traits>

#include "collectives/topology.h"
#include "harness/record/json/results_json.h"

#ifndef TPB_GIT_SHA
#define TPB_GIT_SHA "unknown"
#endif

extern "C" char* openblas_get_config(void);

namespace tpb {

namespace {

// The numeric part of a rank's report, gathered as bytes (ranks run one binary).
struct RankFixed {
  int64_t rank = 0, local_rank = 0, cpus_online = 0, local_size = 0, node = 0;
};
static_assert(std::is_trivially_copyable_v<RankFixed>);

// This rank's GPU as picked around MPI_Init (World::device), with the GPU's NUMA node and the
// rank's CPU set beside it, so a reader sees whether the rank runs near its GPU.
RankDeviceRecord device_binding(const World& w, const nlohmann::ordered_json& placement) {
  const DevicePick& p = w.device;
  RankDeviceRecord d;
  d.cpu_set = placement.value("cpus_allowed", "");
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) d.cuda_visible_devices = v;
  d.before_mpi_init = p.before_mpi_init;
  d.shared = p.shared;
  if (p.index >= 0) {
    d.device_index = p.index;
    d.picked_from = p.before_mpi_init ? p.launcher.source : "MPI node-local rank, after MPI_Init";
  } else {
    d.reasons.push_back("device_index: " + p.reason);
  }
  if (!p.pci_bus_id.empty())
    d.pci_bus_id = p.pci_bus_id;
  else
    d.reasons.push_back("pci_bus_id: " + (p.index >= 0 ? "the driver did not say" : p.reason));
  const int numa = pci_numa_node("/sys", p.pci_bus_id);
  if (numa >= 0)
    d.numa_node = numa;
  else
    d.reasons.push_back(p.pci_bus_id.empty() ? "numa_node: no GPU"
                                             : "numa_node: sysfs gives none for the GPU");
  // NCCL has no API for a peer's transport; its INFO log names them once a communicator has
  // connected (lazily, at the first collective since NCCL 2.22), after this record is written.
  d.reasons.push_back("nccl_transports: not read (NCCL reports them only in its INFO log)");
  return d;
}

std::vector<ContextRankRecord> gather_ranks(const World& w) {
  const RankFixed mine{w.rank, w.local_rank, online_cpus(), w.local_size, w.node};
  const auto fixed = gather_bytes(w.comm, &mine, sizeof mine, 0);
  const auto hosts = gather_strings(w.comm, w.host, 0);
  // Placement is host-defined (what the OS tells about affinity), so it travels as JSON text.
  const nlohmann::ordered_json placement = detect_placement();
  const auto placements = gather_strings(w.comm, placement.dump(), 0);
  const auto bindings = gather_strings(w.comm, to_json(device_binding(w, placement)).dump(), 0);
  std::vector<ContextRankRecord> ranks;
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    RankFixed f;
    std::memcpy(&f, fixed[i].data(), sizeof f);
    ranks.push_back({f.rank, hosts[i], f.local_rank, nlohmann::ordered_json::parse(placements[i]),
                     f.cpus_online, f.local_size, f.node,
                     rank_device_from_json(nlohmann::ordered_json::parse(bindings[i]))});
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
        "NCCL_NVLS_ENABLE", "OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_include", "SLURM_JOB_ID",
        "SLURM_NNODES", "TPB_LINKS_FILE"})
    if (const char* v = std::getenv(k)) env[k] = v;
  return env;
}

// Grouped by MPI's node, named by the node's first rank's host name.
std::vector<HostRanksRecord> host_ranks(const std::vector<ContextRankRecord>& ranks) {
  std::map<int64_t, HostRanksRecord> by_node;
  for (const auto& r : ranks) {
    HostRanksRecord& h = by_node[r.node.value_or(0)];
    if (h.ranks.empty()) h = {r.host, r.node.value_or(0), {}};
    h.ranks.push_back(r.rank);
  }
  std::vector<HostRanksRecord> out;
  for (auto& [node, h] : by_node) out.push_back(std::move(h));
  return out;
}

// TPB_LINKS_FILE: the launcher's record of the links it made. A file that cannot be read is
// recorded as such rather than dropped, so a shaped run never looks unshaped.
std::optional<nlohmann::ordered_json> launcher_links() {
  const char* path = std::getenv("TPB_LINKS_FILE");
  if (!path || !*path) return std::nullopt;
  std::ifstream in(path);
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
  if (!in || j.is_discarded() || !j.is_object())
    return nlohmann::ordered_json{{"file", path}, {"error", "unreadable or not a JSON object"}};
  j["file"] = path;
  return j;
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
  c.host_ranks = host_ranks(c.ranks);
  c.links = launcher_links();
  c.mpi_thread_level = thread_level_name(w.thread_level);
  return c;
}

}  // namespace tpb
