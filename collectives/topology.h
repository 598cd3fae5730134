// Topology: what the ranks run on and how they are placed (hwloc-free: sched affinity,
// sysfs NUMA nodes), recorded in results' context so runs on different layouts compare.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace tpb {

// This process's placement: allowed CPUs, the CPU it runs on and its NUMA node.
nlohmann::ordered_json detect_placement();

// Online CPU count of this host (for ranks_per_core).
int online_cpus();

}  // namespace tpb
