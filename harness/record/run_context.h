// The results' `context` block: everything needed to understand and rerun a result (argv,
// versions, git sha, env of interest, hosts, rank placement, cache and core counts).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/mpi/world.h"
#include "layers/device.h"

namespace tpb {

// Collective over the world; the full block is valid on rank 0.
nlohmann::ordered_json collect_context(const World& w, const std::vector<std::string>& argv,
                                       const DeviceCaps& caps);

// Library and build versions (also printed by `tpbench info`).
nlohmann::ordered_json versions_json();

}  // namespace tpb
