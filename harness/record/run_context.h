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

// This rank's record: World::device's pick, the GPU's NUMA node from `sysfs_root`, and
// `cpu_set` (the rank's affinity). Each null field gets one "field: why" reason.
RankDeviceRecord device_binding(const World& w, const std::string& cpu_set,
                                const std::string& sysfs_root = "/sys");

// Collective over w.comm: every rank's record on rank 0, by world rank (empty elsewhere).
std::vector<RankDeviceRecord> gather_device_bindings(const World& w, const RankDeviceRecord& mine);

// Library and build versions (also printed by `tpbench info`).
VersionsRecord versions_record(const std::vector<std::string>& backends);

}  // namespace tpb
