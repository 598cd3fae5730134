// The model collective under another NCCL release's tuning table (nccl_tuning.h): each figure
// below is worked out by hand from that release's src/graph/tuning.cc and the preset's links.
#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";
constexpr int64_t kGiB = int64_t{1} << 30, kMiB = int64_t{1} << 20;

TEST(NcclReleases, TheDefaultIs2203AndTheSuffixPicksAnother) {
  EXPECT_STREQ(load_fabric("nvlink4", kConfigs).nccl->version, "2.20.3");
  EXPECT_STREQ(load_fabric("default", kConfigs).nccl->version, "2.20.3");
  const Fabric f = load_fabric("nvlink4:nccl-2.27.3", kConfigs);
  EXPECT_STREQ(f.nccl->version, "2.27.3");
  EXPECT_EQ(f.name, "nvlink4");
  EXPECT_EQ(*f.gpu_arch, GpuArch::hopper);
}

TEST(NcclReleases, RingLLOnHopperByHand) {
  const Fabric old = load_fabric("nvlink4", kConfigs);
  const Fabric now = load_fabric("nvlink4:nccl-2.27.3", kConfigs);
  // 4 ranks, 1 MiB, ring LL: latency 6.6 + 6 x 0.6 = 10.2 us in both. Bus: 2.20, min(87.7,
  // 370.8 / 4) = 87.7; 2.27, min(141 (Hopper's ceiling), 370.8 / 2) = 141; algbw x 4 / 6.
  const ModelTime a = model_collective(old, CollKind::all_reduce, kMiB, {4, 1}, ModelAlgo::ring);
  const ModelTime b = model_collective(now, CollKind::all_reduce, kMiB, {4, 1}, ModelAlgo::ring);
  EXPECT_EQ(b.proto, ModelProto::ll);
  EXPECT_NEAR(b.latency_s, 10.2e-6, 1e-12);
  EXPECT_NEAR(b.algbw_GBps, 141.0 * 4 / 6, 1e-9);
  EXPECT_NEAR(b.time_s, 10.2e-6 + kMiB / (141.0 * 4 / 6) * 1e-9, 1e-12);
  EXPECT_EQ(a.proto, ModelProto::ll);
  EXPECT_NEAR(a.algbw_GBps, 87.7 * 4 / 6, 1e-9);
  // NCCL's own choice at 1 MiB: 2.20 takes NVLS (23 us + 1 MiB at 450 x 0.687 x 4/5), 2.27 the
  // ring LL above (21.4 us against NVLS's 25 + 3.4).
  const ModelTime na = model_collective(old, CollKind::all_reduce, kMiB, {4, 1}, ModelAlgo::nccl);
  const ModelTime nb = model_collective(now, CollKind::all_reduce, kMiB, {4, 1}, ModelAlgo::nccl);
  EXPECT_EQ(na.algo, ModelAlgo::nvls);
  EXPECT_NEAR(na.latency_s, 23e-6, 1e-12);
  EXPECT_EQ(nb.algo, ModelAlgo::ring);
  const ModelTime nvls = model_collective(now, CollKind::all_reduce, kMiB, {4, 1}, ModelAlgo::nvls);
  EXPECT_NEAR(nvls.latency_s, 25e-6, 1e-12);
}

TEST(NcclReleases, BlackwellsCeilingAndTheTreesSimpleLatency) {
  const Fabric b = load_fabric("nvlink5:nccl-2.27.3", kConfigs);
  // 8 ranks, 64 KiB, ring LL: bus min(282, 900 x 0.802 / 2 = 360.9) = 282; algbw x 8 / 14.
  const ModelTime r = model_collective(b, CollKind::all_reduce, 64 << 10, {8, 1}, ModelAlgo::ring);
  EXPECT_EQ(r.proto, ModelProto::ll);
  EXPECT_NEAR(r.algbw_GBps, 282.0 * 8 / 14, 1e-9);
  // The tree's Simple latency at 8 ranks on one node, at 1 GiB (Simple is its fastest there):
  // 2.27, 8.4 + 2 x 7 x 4.0 us; 2.20, 0 + 2 x 7 x 28.
  const Fabric h = load_fabric("nvlink4:nccl-2.27.3", kConfigs);
  const ModelTime t = model_collective(h, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::tree);
  EXPECT_EQ(t.proto, ModelProto::simple);
  EXPECT_NEAR(t.latency_s, (8.4 + 2 * 7 * 4.0) * 1e-6, 1e-12);
  const Fabric h20 = load_fabric("nvlink4", kConfigs);
  EXPECT_NEAR(model_collective(h20, CollKind::all_reduce, kGiB, {8, 1}, ModelAlgo::tree).latency_s,
              2 * 7 * 28.0 * 1e-6, 1e-12);
  // 2.20 had no Blackwell row: compute capability 10 took Hopper's 87.7.
  const Fabric b20 = load_fabric("nvlink5", kConfigs);
  EXPECT_NEAR(
      model_collective(b20, CollKind::all_reduce, 64 << 10, {8, 1}, ModelAlgo::ring).algbw_GBps,
      87.7 * 8 / 14, 1e-9);
}

TEST(NcclReleases, TwoNodesCountOneInterStepFewerPerDirection) {
  const Fabric f = load_fabric("ib-ndr:nccl-2.27.3", kConfigs);
  const ModelTime t = model_collective(f, CollKind::all_reduce, kGiB, {16, 2}, ModelAlgo::ring);
  // 30 steps, 2 x (2 - 1) = 2 between nodes (2.20: 2 x 2 = 4); the plateau's 1.4 as before.
  EXPECT_NEAR(t.latency_s, 1.4 * (8.4 + 28 * 3.4 + 2 * 14.0) * 1e-6, 1e-12);
  // One GPU per node: the network steps take the tree's latency (LL 5.0 us, the ring's 2.7).
  const ModelTime one = model_collective(f, CollKind::all_reduce, 8, {2, 2}, ModelAlgo::ring);
  EXPECT_EQ(one.proto, ModelProto::ll);
  EXPECT_NEAR(one.latency_s, (6.6 + 2 * 5.0) * 1e-6, 1e-12);
}

TEST(NcclReleases, RefusedWithTheFieldNamed) {
  EXPECT_EQ(bad_input([] {
              load_fabric("nvlink4:nccl-9.9", kConfigs);
            }).rfind("--topology: 'nvlink4:nccl-9.9': NCCL '9.9' has no tuning table", 0),
            0u);
  EXPECT_EQ(bad_input([] {
              load_fabric("nvlink4:fast", kConfigs);
            }).rfind("--topology: 'nvlink4:fast': a modelled preset's one modifier", 0),
            0u);
  // PCIe presets name no GPU: 2.27's one-node LL ceiling differs by generation.
  const Fabric p = load_fabric("pcie4:nccl-2.27.3", kConfigs);
  EXPECT_NE(bad_input([&] {
              model_collective(p, CollKind::all_reduce, kMiB, {8, 1}, ModelAlgo::nccl);
            }).find("has no gpu_arch"),
            std::string::npos);
  nlohmann::json m = nlohmann::json::parse(
      R"({"gpus_per_node": 8, "intra": {"hw": "nvlink", "line_GBps": 450, "efficiency": 0.8,
          "source": "s"}, "nccl": "2.27.3", "gpu_arch": "hopper"})");
  EXPECT_STREQ(parse_fabric(m, "x").nccl->version, "2.27.3");
  m["gpu_arch"] = "volta";
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);
  m["gpu_arch"] = "hopper";
  m["nccl"] = "2.18";
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);
}

}  // namespace
}  // namespace tpb
