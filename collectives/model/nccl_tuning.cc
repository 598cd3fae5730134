// Each table is copied from src/graph/tuning.cc at the release's tag (NVIDIA/nccl v2.20.3-1,
// v2.27.3-1): baseLat, hwLat, llMaxBws and the ring refinements of ncclTopoTuneModel. The
// 2.27 line raised Hopper's one-node LL ceiling (87.7 -> 141 GB/s) and added Blackwell's (282),
// runs ring LL at half the bus bandwidth (a quarter before, for all-reduce), cut the tree's
// Simple latency (hwLat 28 -> 4.0 us a hop on NVLink and PCI, baseLat 0 -> 8.4), moved NVLS's
// NVLink latency from 23 to 25 us, and counts an all-reduce ring's inter-node steps as
// 2 (nodes - 1).
#include "collectives/model/nccl_tuning.h"

#include <array>

#include "base/enum_names.h"
#include "base/errors.h"

namespace tpb {

namespace {

constexpr std::array<const char*, 3> kGpuArchNames{"ampere", "hopper", "blackwell"};

constexpr NcclTuning kNccl2203{
    "2.20.3",
    {{6.6, 14.0, 8.4}, {6.8, 14.0, 0.0}, {0, 0, 0}},
    {{{0.6, 1.9, 3.4}, {0.6, 1.25, 28}, {0, 0, 23}},   // NVLink: ring, tree, NVLS
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 28}, {0, 0, 0}},     // PCI
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 28}, {0, 0, 18}}},  // network
    // 2.20 has no Blackwell row: compute capability 9.0 and later index Hopper's.
    {87.7, 87.7, 87.7},
    39.0,
    20.4,
    0.25,
    1.0 / 3,
    0.7,
    0.92,
    false,
    false};

constexpr NcclTuning kNccl2273{
    "2.27.3",
    {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}, {0, 0, 0}},
    {{{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25}},  // NVLink: ring, tree, NVLS
     {{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}},    // PCI
     {{2.7, 4.0, 14.0}, {5.0, 8.5, 14}, {0, 0, 18}}},  // network
    {87.7, 141.0, 282.0},
    39.0,
    20.4,
    0.5,
    0.5,
    0.92,
    0.92,
    true,
    true};

}  // namespace

const NcclTuning& nccl_tuning(const std::string& version, const std::string& option) {
  for (const NcclTuning* t : {&kNccl2203, &kNccl2273})
    if (version == t->version) return *t;
  throw BadInput(option + ": NCCL '" + version + "' has no tuning table here (2.20.3 or 2.27.3)");
}

const NcclTuning& default_nccl_tuning() {
  return kNccl2203;
}

std::optional<GpuArch> parse_gpu_arch(const std::string& text) {
  return enum_from_name<GpuArch>(kGpuArchNames, text);
}

}  // namespace tpb
