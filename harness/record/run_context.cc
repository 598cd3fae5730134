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

#ifndef TPB_GIT_SHA
#define TPB_GIT_SHA "unknown"
#endif

extern "C" char* openblas_get_config(void);

namespace tpb {

namespace {

// A rank's device binding travels as numbers (fixed bytes) and one string of fields joined
// by the ASCII unit separator (no bus id, CPU list or reason holds it).
constexpr char kSep = '\x1f';

// The numeric fields; -1 stands for null.
struct BindingFixed {
  int64_t device_index = -1, numa_node = -1, visible_devices_set = 0, before_mpi_init = 0,
          shared = 0, reasons = 0;
};
static_assert(std::is_trivially_copyable_v<BindingFixed>);

int64_t or_minus_one(const nlohmann::ordered_json& j) {
  return j.is_number_integer() ? j.get<int64_t>() : -1;
}

nlohmann::ordered_json or_null(int64_t v) {
  return v < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s)
    if (c == kSep)
      out.emplace_back();
    else
      out.back() += c;
  return out;
}

// The numeric part of a rank's report, gathered as bytes (ranks run one binary).
struct RankFixed {
  int64_t rank = 0, local_rank = 0, cpus_online = 0, local_size = 0, node = 0;
};
static_assert(std::is_trivially_copyable_v<RankFixed>);

std::vector<ContextRankRecord> gather_ranks(const World& w) {
  const RankFixed mine{w.rank, w.local_rank, online_cpus(), w.local_size, w.node};
  const auto fixed = gather_bytes(w.comm, &mine, sizeof mine, 0);
  const auto hosts = gather_strings(w.comm, w.host, 0);
  // Placement is host-defined (what the OS tells about affinity), so it travels as JSON text.
  const nlohmann::ordered_json placement = detect_placement();
  const auto placements = gather_strings(w.comm, placement.dump(), 0);
  const auto bindings =
      gather_device_bindings(w, device_binding(w, placement.value("cpus_allowed", "")));
  std::vector<ContextRankRecord> ranks;
  for (std::size_t i = 0; i < fixed.size(); ++i) {
    RankFixed f;
    std::memcpy(&f, fixed[i].data(), sizeof f);
    ranks.push_back({f.rank, hosts[i], f.local_rank, nlohmann::ordered_json::parse(placements[i]),
                     f.cpus_online, f.local_size, f.node, bindings[i]});
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
        "NCCL_NVLS_ENABLE", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "CUDA_DEVICE_ORDER",
        "OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_include", "SLURM_JOB_ID", "SLURM_NNODES",
        "TPB_LINKS_FILE"})
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

RankDeviceRecord device_binding(const World& w, const std::string& cpu_set,
                                const std::string& sysfs_root) {
  const DevicePick& p = w.device;
  RankDeviceRecord d;
  d.cpu_set = cpu_set;
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
  const int numa = pci_numa_node(sysfs_root, p.pci_bus_id);
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

std::vector<RankDeviceRecord> gather_device_bindings(const World& w, const RankDeviceRecord& mine) {
  const BindingFixed fixed{or_minus_one(mine.device_index),
                           or_minus_one(mine.numa_node),
                           mine.cuda_visible_devices.is_string() ? 1 : 0,
                           mine.before_mpi_init ? 1 : 0,
                           mine.shared ? 1 : 0,
                           static_cast<int64_t>(mine.reasons.size())};
  std::string text = mine.pci_bus_id.is_string() ? mine.pci_bus_id.get<std::string>() : "";
  text += kSep +
          (mine.cuda_visible_devices.is_string() ? mine.cuda_visible_devices.get<std::string>()
                                                 : std::string()) +
          kSep + mine.cpu_set + kSep + mine.picked_from;
  for (const auto& r : mine.reasons) text += kSep + r;
  const auto numbers = gather_bytes(w.comm, &fixed, sizeof fixed, 0);
  const auto texts = gather_strings(w.comm, text, 0);
  std::vector<RankDeviceRecord> all;
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    BindingFixed f;
    std::memcpy(&f, numbers[i].data(), sizeof f);
    auto s = split(texts[i]);
    s.resize(std::max<std::size_t>(s.size(), 4 + static_cast<std::size_t>(f.reasons)));
    RankDeviceRecord d;
    d.device_index = or_null(f.device_index);
    if (!s[0].empty()) d.pci_bus_id = s[0];
    if (f.visible_devices_set) d.cuda_visible_devices = s[1];
    d.numa_node = or_null(f.numa_node);
    d.cpu_set = s[2];
    d.picked_from = s[3];
    d.before_mpi_init = f.before_mpi_init != 0;
    d.shared = f.shared != 0;
    d.reasons.assign(s.begin() + 4, s.begin() + 4 + f.reasons);
    all.push_back(std::move(d));
  }
  return all;
}

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
