// The model collective against hand counts of NCCL's tuning formulas (collective_model.cc):
// every expected figure below is worked out from the constants and the preset's numbers.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/config_loader.h"
#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";
constexpr int64_t kGiB = int64_t{1} << 30;

double busbw(const ModelTime& t, int64_t bytes, int n) {
  return static_cast<double>(bytes) / t.time_s / 1e9 * 2.0 * (n - 1) / n;
}

TEST(CollectiveModel, RingSimpleOnNvlink4ByHand) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const ModelTime t = model_collective(f, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::ring);
  // bus 450 x 0.824 = 370.8 GB/s, algbw 370.8 x 8 / 14; latency 8.4 + 14 x 3.4 us.
  EXPECT_EQ(t.proto, ModelProto::simple);
  EXPECT_NEAR(t.latency_s, 56.0e-6, 1e-12);
  EXPECT_NEAR(t.algbw_GBps, 370.8 * 8 / 14, 1e-9);
  EXPECT_NEAR(t.time_s, 56.0e-6 + kGiB / (370.8 * 8 / 14) * 1e-9, 1e-12);
  // nccl-tests issue 212: ~370 GB/s busbw with NCCL_ALGO=RING on 8x H100 (a prediction here).
  EXPECT_NEAR(busbw(t, kGiB, 8), 370, 37);
}

TEST(CollectiveModel, NvlsOnNvlink4ByHand) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const ModelTime t = model_collective(f, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::nvls);
  EXPECT_EQ(t.algo, ModelAlgo::nvls);
  EXPECT_NEAR(t.latency_s, 23e-6, 1e-12);
  EXPECT_NEAR(t.algbw_GBps, 450 * 0.687 * 8 / 9, 1e-9);
  EXPECT_NEAR(busbw(t, kGiB, 8), 480, 48);  // fitted to this figure: the plumbing, not a check
  // The n-dependence is not fitted: NVIDIA/nccl issue 1455 measured algbw 258 GB/s at 5 GPUs.
  const ModelTime five =
      model_collective(f, CollKind::all_reduce, 2 * kGiB, {5, 1}, ModelAlgo::nvls);
  EXPECT_NEAR(five.algbw_GBps, 258, 0.05 * 258);
}

// `nccl` is NCCL's own choice (what `auto` was before the custom all-reduce: on nvlink4 `auto`
// now takes vLLM's one-shot at 8 B, test_custom_allreduce.cc).
TEST(CollectiveModel, NcclTakesTheFastestAndSmallMessagesRunLL) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const ModelTime small = model_collective(f, CollKind::all_reduce, 8, {8, 1}, ModelAlgo::nccl);
  // Ring LL: 6.6 + 14 x 0.6 = 15.0 us; tree LL 6.8 + 2 x 7 x 0.6 = 15.2 us; NVLS 23 us.
  EXPECT_EQ(small.algo, ModelAlgo::ring);
  EXPECT_EQ(small.proto, ModelProto::ll);
  EXPECT_NEAR(small.latency_s, 15.0e-6, 1e-12);
  const ModelTime big =
      model_collective(f, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::automatic);
  EXPECT_EQ(big.algo, ModelAlgo::nvls);
  for (ModelAlgo a : {ModelAlgo::ring, ModelAlgo::tree, ModelAlgo::nvls})
    EXPECT_LE(big.time_s, model_collective(f, CollKind::all_reduce, kGiB, {8, 1}, a).time_s);
}

TEST(CollectiveModel, TwoNodesCountInterStepsApart) {
  const Fabric f = load_fabric("ib-ndr", kConfigs);
  const ModelTime t = model_collective(f, CollKind::all_reduce, kGiB, {16, 2}, ModelAlgo::ring);
  // 30 steps, 4 of them between nodes (NCCL: 2 x nodes); intra latency max(3.4, 3 x 1.0); x 1.4,
  // NCCL 2.20.3's plateau of the multi-node Simple ring (1 GiB / (16 channels x 16 ranks) >= 64).
  EXPECT_NEAR(t.latency_s, 1.4 * (8.4 + 26 * 3.4 + 4 * 14.0) * 1e-6, 1e-12);
  // Bus: min(370.8 inside, 8 NICs x 50 x 0.96 = 384 out of the node).
  EXPECT_NEAR(t.algbw_GBps, 370.8 * 16 / 30, 1e-9);
  // One GPU per node: a single NIC carries the ring, 48 GB/s.
  const ModelTime one = model_collective(f, CollKind::all_reduce, kGiB, {2, 2}, ModelAlgo::ring);
  EXPECT_NEAR(one.algbw_GBps, 48.0 * 2 / 2, 1e-9);
}

TEST(CollectiveModel, AContiguousGroupTakesWholeNodes) {
  const Fabric f = load_fabric("ib-ndr", kConfigs);  // 8 GPUs a node
  for (const auto& [ranks, nodes] : {std::pair{1, 1}, {8, 1}, {16, 2}, {64, 8}}) {
    const std::optional<ModelGroup> g = contiguous_group(f, ranks);
    ASSERT_TRUE(g) << ranks;
    EXPECT_EQ(g->ranks, ranks);
    EXPECT_EQ(g->nodes, nodes) << ranks;
  }
  // 12 would fill one node and half of the next: no even split to price.
  EXPECT_FALSE(contiguous_group(f, 12));
}

TEST(CollectiveModel, TreeCorrectionIsNccl220s) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  // Tree LL128 (the tree's fastest protocol here) at 4 MiB: log2(4 MiB / 64) = 16, NCCL 2.20.3's
  // factor .8 (the older table: .6); at 8 MiB .9 (older: .7). Bus 370.8 x 0.92 x 7/9, algbw half.
  const double bus = 370.8 * 0.92 * 7.0 / 9.0;
  const ModelTime t = model_collective(f, CollKind::all_reduce, 4 << 20, {8, 1}, ModelAlgo::tree);
  EXPECT_EQ(t.proto, ModelProto::ll128);
  EXPECT_NEAR(t.latency_s, (14.0 + 2 * 7 * 1.25) * 1e-6, 1e-12);
  EXPECT_NEAR(t.algbw_GBps, bus * 0.5 * 0.8, 1e-9);
  const ModelTime t8 = model_collective(f, CollKind::all_reduce, 8 << 20, {8, 1}, ModelAlgo::tree);
  EXPECT_NEAR(t8.algbw_GBps, bus * 0.5 * 0.9, 1e-9);
}

TEST(CollectiveModel, OtherKindsRunRingsWithTheirStepCounts) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const ModelTime ag = model_collective(f, CollKind::all_gather, kGiB, {8, 1}, ModelAlgo::ring);
  EXPECT_NEAR(ag.algbw_GBps, 370.8 * 8 / 7, 1e-9);
  EXPECT_NEAR(ag.latency_s, (8.4 + 7 * 3.4) * 1e-6, 1e-12);
  const ModelTime bc = model_collective(f, CollKind::broadcast, kGiB, {8, 1}, ModelAlgo::automatic);
  EXPECT_EQ(bc.algo, ModelAlgo::ring);
  EXPECT_NEAR(bc.algbw_GBps, 370.8 * 8 / 8, 1e-9);
}

TEST(CollectiveModel, RefusesWhatTheFabricLacks) {
  const Fabric pcie = load_fabric("pcie5", kConfigs);
  const Fabric nvl = load_fabric("nvlink4", kConfigs);
  const Fabric ndr = load_fabric("ib-ndr", kConfigs);
  auto msg = [](auto f) {
    try {
      f();
    } catch (const BadInput& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg([&] {
              model_collective(pcie, CollKind::all_reduce, 1024, {8, 1}, ModelAlgo::nvls);
            }).rfind("--algo: nvls needs NVLink SHARP", 0),
            0u);
  EXPECT_EQ(msg([&] {
              model_collective(ndr, CollKind::all_reduce, 1024, {16, 2}, ModelAlgo::nvls);
            }).rfind("--algo: nvls is one node", 0),
            0u);
  EXPECT_EQ(msg([&] {
              model_collective(nvl, CollKind::all_reduce, 1024, {16, 2}, ModelAlgo::ring);
            }).rfind("--topology: 'nvlink4' is one node", 0),
            0u);
  EXPECT_EQ(msg([&] {
              model_collective(nvl, CollKind::all_gather, 1024, {8, 1}, ModelAlgo::tree);
            }).rfind("--algo: tree is an all_reduce algorithm", 0),
            0u);
  EXPECT_EQ(msg([] { parse_model_algo("fast", "--algo"); }).rfind("--algo: 'fast'", 0), 0u);
  EXPECT_EQ(msg([] {
              load_fabric("nvlink", kConfigs);
            }).rfind("--topology: preset 'nvlink' describes no", 0),
            0u);
  EXPECT_EQ(msg([] { load_fabric("nope", kConfigs); }).rfind("--topology: unknown preset", 0), 0u);
}

TEST(CollectiveModel, EveryNumberInAPresetNeedsItsSource) {
  nlohmann::json m = nlohmann::json::parse(
      R"({"gpus_per_node": 8, "intra": {"hw": "nvlink", "line_GBps": 450, "efficiency": 0.8}})");
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);
  m["intra"]["source"] = "a datasheet";
  EXPECT_NO_THROW(parse_fabric(m, "x"));
  m["intra"]["efficiency"] = 1.5;
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);
  m["intra"]["efficiency"] = 0.8;
  m["nvls"] = {{"efficiency", 0.7}};
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);  // no source
  m["intra"]["hw"] = "pci";
  m["nvls"]["source"] = "s";
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);  // NVLS on PCIe
}

TEST(CollectiveModel, RingOnNvlink3ByHand) {
  const Fabric f = load_fabric("nvlink3", kConfigs);
  const ModelTime t = model_collective(f, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::ring);
  // bus 300 x 0.8 = 240 GB/s (NCCL's 20.0 GB/s per SM80 link, 12 links), algbw 240 x 8 / 14.
  EXPECT_NEAR(t.algbw_GBps, 240.0 * 8 / 14, 1e-9);
  EXPECT_NEAR(t.time_s, 56.0e-6 + kGiB / (240.0 * 8 / 14) * 1e-9, 1e-12);  // latency as nvlink4
  EXPECT_THROW(model_collective(f, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::nvls), BadInput);
}

TEST(CollectiveModel, EveryShippedModelPresetLoads) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(kConfigs + "/topologies")) {
    const nlohmann::json j = read_json_file(e.path().string(), "--topology");
    if (!j.contains("model")) continue;
    const Fabric f = load_fabric(e.path().stem().string(), kConfigs);
    EXPECT_GT(f.intra.bus_GBps(), 0) << f.name;
    ++n;
  }
  EXPECT_EQ(n, 9);  // nvlink3 nvlink4 nvlink5 pcie4 pcie5 pcie5-switch ib-ndr ib-xdr roce-400g
}

}  // namespace
}  // namespace tpb
