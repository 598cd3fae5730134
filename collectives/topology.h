// Topology: what the ranks run on and how they are placed (hwloc-free: sched affinity,
// sysfs NUMA nodes), recorded in results' context so runs on different layouts compare.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

// This process's placement: allowed CPUs, the CPU it runs on and its NUMA node.
nlohmann::ordered_json detect_placement();

// Online CPU count of this host (for ranks_per_core).
int online_cpus();

// `nvidia-smi topo -m` (the GPU/NIC link matrix) where nvidia-smi is on PATH, else "".
// Runs a process: call it once per launch, from one rank.
std::string gpu_topology_matrix();

}  // namespace tpb
