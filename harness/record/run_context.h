// Collecting the results' `context` block (record/context_record.h) on every rank.
#pragma once
#include <string>
#include <vector>

#include "harness/mpi/world.h"
#include "harness/record/context_record.h"
#include "layers/device.h"

namespace tpb {

// Collective over the world; the full block is valid on rank 0. `backends` are the ones
// built into this binary (the registry knows them; records sit below it).
RunContextRecord collect_context(const World& w, const std::vector<std::string>& argv,
                                 const DeviceCaps& caps, const std::vector<std::string>& backends);

// Library and build versions (also printed by `tpbench info`).
VersionsRecord versions_record(const std::vector<std::string>& backends);

}  // namespace tpb
