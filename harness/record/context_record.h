// The results' `context` block as plain data: everything needed to understand and rerun a
// result (argv, versions, git sha, env of interest, hosts, rank placement, cache and cores).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "collectives/topology_presets.h"

namespace tpb {

struct VersionsRecord {
  std::string tpbench, git_sha, mpi, blas, compiler;
  std::vector<std::string> backends;  // compiled into this binary
};

// `tpbench info`'s attention libraries (harness/backends/registry.h AttentionLibraries).
struct AttentionLibrariesRecord {
  bool native = false, cudnn_compiled = false;
  std::string cudnn_frontend_version;
  std::string cudnn_runtime_version;  // "9.15.0" or "not found"
  std::string cudnn_runtime_note;
};

struct DeviceContextRecord {
  std::string backend, name;
  bool device_timer = false;
  double timer_resolution_s = 0, memory_bytes = 0, llc_bytes = 0;
  std::optional<std::string> llc_source;  // absent in results written before it existed
};

// The GPU a rank opened and where the rank runs beside it. A value that could not be had is
// null (a CPU backend's GPU fields; NCCL's transports until read) and `reason` says why.
struct RankDeviceRecord {
  nlohmann::ordered_json device_index;          // CUDA index in the rank's visible set
  nlohmann::ordered_json pci_bus_id;            // as CUDA spells it
  nlohmann::ordered_json cuda_visible_devices;  // null when unset
  nlohmann::ordered_json numa_node;             // the GPU's (sysfs numa_node of its PCI device)
  std::string cpu_set;                          // the rank's affinity (sched_getaffinity)
  std::string picked_from;       // the launcher variable, or MPI's node-local rank after MPI_Init
  bool before_mpi_init = false;  // the GPU was current before MPI_Init
  bool shared = false;           // another rank on its host opened the same GPU (mpi only)
  nlohmann::ordered_json nccl_transports;  // {peer: transport} of its NCCL communicator
  std::vector<std::string> reasons;        // one per null field, "field: why"
};

struct ContextRankRecord {
  int64_t rank = 0;
  std::string host;
  int64_t local_rank = 0;
  nlohmann::ordered_json placement;  // host-defined (cpus allowed, NUMA node, ...)
  int64_t cpus_online = 0, local_size = 0;
  std::optional<int64_t> node;  // world rank of its host's first rank (absent before 1.4.0)
  std::optional<RankDeviceRecord> device_binding;  // issue 54 (absent before it)
};

// One host and the world ranks on it, as MPI_COMM_TYPE_SHARED groups them.
struct HostRanksRecord {
  std::string host;
  int64_t node = 0;  // world rank of the host's first rank
  std::vector<int64_t> ranks;
};

// The peaks a run's points are judged against, one entry per dtype and hardware profile: a
// sweep probes (or reads the profile) once for each, so its points share one denominator.
struct PeaksUsedRecord {
  std::string dtype, hardware;
  double flops = 0, bw = 0;  // null when they could not be had (then `source` says why)
  std::string source;
};

struct RunContextRecord {
  std::string date;  // UTC, ISO 8601
  std::vector<std::string> argv;
  VersionsRecord versions;
  std::vector<std::string> hosts;
  int64_t world_size = 0;
  double ranks_per_core = 0;  // the most crowded host's
  bool oversubscribed = false;
  DeviceContextRecord device;
  double llc_bytes = 0;
  nlohmann::ordered_json env;  // the variables of interest that were set, by name
  std::vector<ContextRankRecord> ranks;
  std::optional<TopologyContext> topology;
  std::optional<std::vector<PeaksUsedRecord>> peaks;
  std::optional<std::vector<HostRanksRecord>> host_ranks;
  // The links as the launcher set and measured them (launch/netns_hosts.sh writes the file
  // named by TPB_LINKS_FILE); absent when no launcher said.
  std::optional<nlohmann::ordered_json> links;
  // --backend model (1.6.0): each modelled interconnect's preset file as read, by name, with
  // the source of every figure; the ranks are virtual and this process is the only real one.
  std::optional<nlohmann::ordered_json> fabric;
  // 1.11.0: the MPI thread level the ranks ran at ("single" unless a helper thread could run:
  // harness/config/thread_need.h); above SINGLE, Open MPI locks inside every call.
  std::optional<std::string> mpi_thread_level;
};

}  // namespace tpb
