// The serving engines' custom all-reduce (collectives/model/custom_allreduce.h) and `auto`'s
// choice between it and NCCL, pinned to hand counts from nvlink4's custom_allreduce figures
// (one-shot 6.0 us and 0.874 x 450 GB/s of reads; two-shot 13.3 us and 0.471 x 450).
#include <gtest/gtest.h>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "collectives/model/custom_allreduce.h"
#include "collectives/model/fabric.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";
constexpr int64_t kKiB = 1024, kMiB = 1024 * 1024;

ModelTime at(const Fabric& f, int64_t bytes, int ranks, ModelAlgo a, int nodes = 1) {
  return model_collective(f, CollKind::all_reduce, bytes, {ranks, nodes}, a);
}

std::string refusal(const Fabric& f, int64_t bytes, ModelGroup g, ModelAlgo a,
                    CollKind kind = CollKind::all_reduce) {
  try {
    model_collective(f, kind, bytes, g, a);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "no error";
}

// nvlink4 with an inter tier: two 8-GPU nodes, custom all-reduce figures kept.
Fabric two_node_nvlink4() {
  Fabric f = load_fabric("nvlink4", kConfigs);
  f.inter = LinkTier{LinkHw::net, 50, 0.96};
  f.nics_per_node = 8;
  return f;
}

TEST(CustomAllReduce, OneShotByHand) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const ModelTime t = at(f, 16 * kKiB, 8, ModelAlgo::oneshot);
  // Every rank reads 7 peers' 16 KiB over 450 x 0.874 GB/s of NVLink ingress: algbw = 393.3 / 7.
  EXPECT_EQ(t.algo, ModelAlgo::oneshot);
  EXPECT_EQ(t.proto, ModelProto::p2p);
  EXPECT_NEAR(t.latency_s, 6.0e-6, 1e-12);
  EXPECT_NEAR(t.algbw_GBps, 450 * 0.874 / 7, 1e-9);
  EXPECT_NEAR(t.time_s, 6.0e-6 + 7 * 16384 / (450 * 0.874) * 1e-9, 1e-12);
}

TEST(CustomAllReduce, TwoShotByHand) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const ModelTime t = at(f, 4 * kMiB, 6, ModelAlgo::twoshot);
  // A reduce-scatter and an all-gather, each reading 5/6 of the message from peers.
  EXPECT_NEAR(t.latency_s, 13.3e-6, 1e-12);
  EXPECT_NEAR(t.algbw_GBps, 450 * 0.471 * 6 / 10, 1e-9);
  EXPECT_NEAR(t.time_s, 13.3e-6 + 2.0 * 5 / 6 * 4 * kMiB / (450 * 0.471) * 1e-9, 1e-12);
}

TEST(CustomAllReduce, OneShotBeatsTwoShotSmallAndLosesLarge) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  // 8 ranks: 7.3 us of latency against 7 S / 393.3 - 1.75 S / 212.0 GB/s: even at 765 KB.
  EXPECT_LT(at(f, 16 * kKiB, 8, ModelAlgo::oneshot).time_s,
            at(f, 16 * kKiB, 8, ModelAlgo::twoshot).time_s);
  EXPECT_GT(at(f, 8 * kMiB, 8, ModelAlgo::oneshot).time_s,
            at(f, 8 * kMiB, 8, ModelAlgo::twoshot).time_s);
  // 4 ranks read 3 S against 1.5 S: even only at 13 MB (vLLM PR 24111's TP=4 ca_1stage column
  // is the faster one up to its 4 MB row).
  EXPECT_LT(at(f, 4 * kMiB, 4, ModelAlgo::oneshot).time_s,
            at(f, 4 * kMiB, 4, ModelAlgo::twoshot).time_s);
  EXPECT_GT(at(f, 64 * kMiB, 4, ModelAlgo::oneshot).time_s,
            at(f, 64 * kMiB, 4, ModelAlgo::twoshot).time_s);
}

TEST(CustomAllReduce, AutoTakesItWhereVllmWould) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  // One node of NVLink, 2/4/6/8 ranks, below vLLM's H100 limits (64 MB, 32 MB, 512 KB, 256 KB);
  // one-shot as vLLM's dispatch says.
  EXPECT_EQ(at(f, 16 * kKiB, 8, ModelAlgo::automatic).algo, ModelAlgo::oneshot);
  EXPECT_EQ(at(f, 255 * kKiB, 8, ModelAlgo::automatic).algo, ModelAlgo::oneshot);
  EXPECT_EQ(at(f, 256 * kKiB, 6, ModelAlgo::automatic).algo, ModelAlgo::twoshot);
  EXPECT_EQ(at(f, 300 * kKiB, 4, ModelAlgo::automatic).algo, ModelAlgo::oneshot);
  EXPECT_EQ(at(f, 512 * kKiB, 4, ModelAlgo::automatic).algo, ModelAlgo::twoshot);
  EXPECT_EQ(at(f, 4 * kMiB, 2, ModelAlgo::automatic).algo, ModelAlgo::oneshot);
  EXPECT_EQ(at(f, 8 * kMiB, 4, ModelAlgo::automatic).algo, ModelAlgo::twoshot);
  EXPECT_EQ(at(f, 64 * kMiB - 16, 2, ModelAlgo::automatic).algo, ModelAlgo::oneshot);
  // auto's time is the kernel's: the same as asking for it.
  EXPECT_EQ(at(f, 16 * kKiB, 8, ModelAlgo::automatic).time_s,
            at(f, 16 * kKiB, 8, ModelAlgo::oneshot).time_s);
}

TEST(CustomAllReduce, AutoRunsNcclElsewhere) {
  const Fabric nvl = load_fabric("nvlink4", kConfigs);
  auto nccl_algo = [](ModelAlgo a) {
    return a == ModelAlgo::ring || a == ModelAlgo::tree || a == ModelAlgo::nvls;
  };
  // At and above the engine's limit for the group size.
  EXPECT_TRUE(nccl_algo(at(nvl, 256 * kKiB, 8, ModelAlgo::automatic).algo));
  EXPECT_TRUE(nccl_algo(at(nvl, 512 * kKiB, 6, ModelAlgo::automatic).algo));
  EXPECT_TRUE(nccl_algo(at(nvl, 32 * kMiB, 4, ModelAlgo::automatic).algo));
  EXPECT_TRUE(nccl_algo(at(nvl, 64 * kMiB, 2, ModelAlgo::automatic).algo));
  const ModelTime big = at(nvl, 8 * kMiB, 8, ModelAlgo::automatic);
  EXPECT_TRUE(nccl_algo(big.algo));
  EXPECT_EQ(big.time_s, at(nvl, 8 * kMiB, 8, ModelAlgo::nccl).time_s);
  // A group size vLLM's kernels do not cover.
  EXPECT_TRUE(nccl_algo(at(nvl, 16 * kKiB, 3, ModelAlgo::automatic).algo));
  // Across nodes: the same NVLink nodes, joined by a network.
  const ModelTime multi = at(two_node_nvlink4(), 16 * kKiB, 16, ModelAlgo::automatic, 2);
  EXPECT_TRUE(nccl_algo(multi.algo));
  EXPECT_EQ(multi.time_s, at(two_node_nvlink4(), 16 * kKiB, 16, ModelAlgo::nccl, 2).time_s);
  // PCIe: no custom_allreduce section, NCCL at every size.
  const Fabric pcie = load_fabric("pcie5", kConfigs);
  EXPECT_FALSE(pcie.custom_ar);
  EXPECT_TRUE(nccl_algo(at(pcie, 16 * kKiB, 8, ModelAlgo::automatic).algo));
  // Other kinds than all-reduce.
  EXPECT_EQ(
      model_collective(nvl, CollKind::all_gather, 16 * kKiB, {8, 1}, ModelAlgo::automatic).algo,
      ModelAlgo::ring);
}

// nvlink3's section carries the H100 fit over to A100 unchanged (its source says so): a refit of
// nvlink4's constants must be carried to nvlink3 too, or its source would be false. The limit is
// vLLM's default on A100, 8 MiB at every group size.
TEST(CustomAllReduce, Nvlink3CarriesTheH100FitOver) {
  const Fabric a100 = load_fabric("nvlink3", kConfigs), h100 = load_fabric("nvlink4", kConfigs);
  ASSERT_TRUE(a100.custom_ar && h100.custom_ar);
  for (auto k : {&CustomAllReduce::oneshot, &CustomAllReduce::twoshot}) {
    const CustomKernel &a = (*a100.custom_ar).*k, &h = (*h100.custom_ar).*k;
    EXPECT_EQ(a.latency_us, h.latency_us);
    EXPECT_EQ(a.p2p_efficiency, h.p2p_efficiency);
  }
  for (int n : {2, 4, 6, 8}) EXPECT_EQ(a100.custom_ar->max_for(n), 8 * kMiB) << n;
  // At 8 KB on 8 ranks (a 7B decode all-reduce): one-shot, at the slower links' rate.
  const ModelTime t = at(a100, 8 * kKiB, 8, ModelAlgo::automatic);
  EXPECT_EQ(t.algo, ModelAlgo::oneshot);
  EXPECT_GT(t.time_s, at(h100, 8 * kKiB, 8, ModelAlgo::automatic).time_s);
}

TEST(CustomAllReduce, NcclIsNcclsOwnChoice) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  // What auto was before the custom all-reduce: ring LL at 8 B, 6.6 + 14 x 0.6 = 15.0 us.
  const ModelTime t = at(f, 8, 8, ModelAlgo::nccl);
  EXPECT_EQ(t.algo, ModelAlgo::ring);
  EXPECT_EQ(t.proto, ModelProto::ll);
  EXPECT_NEAR(t.latency_s, 15.0e-6, 1e-12);
  EXPECT_EQ(parse_model_algo("nccl", "--algo"), ModelAlgo::nccl);
  EXPECT_STREQ(model_algo_name(ModelAlgo::automatic), "auto");
  EXPECT_STREQ(model_proto_name(ModelProto::p2p), "P2P");
}

TEST(CustomAllReduce, RefusesWhereNoEngineRunsIt) {
  const Fabric pcie = load_fabric("pcie5", kConfigs);
  const Fabric nvl = load_fabric("nvlink4", kConfigs);
  EXPECT_EQ(refusal(pcie, 1024, {8, 1}, ModelAlgo::oneshot)
                .rfind("--algo: oneshot is the custom all-reduce over NVLink P2P", 0),
            0u);
  EXPECT_EQ(refusal(two_node_nvlink4(), 1024, {16, 2}, ModelAlgo::twoshot)
                .rfind("--algo: twoshot reads peers' memory inside one node", 0),
            0u);
  EXPECT_EQ(refusal(nvl, 1024, {3, 1}, ModelAlgo::oneshot)
                .rfind("--algo: oneshot runs on 2, 4, 6 or 8 ranks", 0),
            0u);
  EXPECT_EQ(refusal(nvl, 1024, {8, 1}, ModelAlgo::oneshot, CollKind::all_gather)
                .rfind("--algo: oneshot is an all_reduce algorithm", 0),
            0u);
  EXPECT_EQ(at(nvl, 1024, 1, ModelAlgo::oneshot).time_s, 0);  // one rank short-circuits
}

TEST(CustomAllReduce, PresetSectionNeedsNvlinkAndSources) {
  nlohmann::json m = nlohmann::json::parse(R"({"gpus_per_node": 8,
      "intra": {"hw": "nvlink", "line_GBps": 450, "efficiency": 0.8, "source": "s"},
      "custom_allreduce": {"max_bytes": {"2": 67108864, "4": 33554432, "6": 524288, "8": 262144},
        "oneshot": {"latency_us": 6, "p2p_efficiency": 0.9},
        "twoshot": {"latency_us": 13, "p2p_efficiency": 0.5}}})");
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);  // no source
  m["custom_allreduce"]["source"] = "an engine's code and a benchmark";
  const Fabric f = parse_fabric(m, "x");
  ASSERT_TRUE(f.custom_ar);
  EXPECT_EQ(f.custom_ar->max_for(6), 524288);
  EXPECT_EQ(f.custom_ar->max_for(8), 262144);
  for (int n : {1, 3, 16}) EXPECT_EQ(f.custom_ar->max_for(n), 0) << n;  // never taken there
  EXPECT_DOUBLE_EQ(f.custom_ar->twoshot.p2p_efficiency, 0.5);
  m["custom_allreduce"]["oneshot"]["p2p_efficiency"] = 1.5;
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);
  m["custom_allreduce"]["oneshot"]["p2p_efficiency"] = 0.9;
  m["intra"]["hw"] = "pci";
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);  // P2P reads over PCIe: not modelled
}

// A preset's eager_copy carries its fixed part, the HBM rate its bytes move at and a source;
// a missing or out-of-range rate is refused by its field's name.
TEST(CustomAllReduce, EagerCopyNeedsItsRateAndSource) {
  nlohmann::json m = nlohmann::json::parse(R"({"gpus_per_node": 8,
      "intra": {"hw": "nvlink", "line_GBps": 450, "efficiency": 0.8, "source": "s"},
      "custom_allreduce": {"max_bytes": {"2": 67108864, "4": 33554432, "6": 524288, "8": 262144},
        "oneshot": {"latency_us": 6, "p2p_efficiency": 0.9},
        "twoshot": {"latency_us": 13, "p2p_efficiency": 0.5}, "source": "s",
        "eager_copy": {"latency_us": 3, "source": "a fit"}}})");
  const std::string missing = bad_input([&] { parse_fabric(m, "x"); });
  EXPECT_NE(missing.find("eager_copy"), std::string::npos) << missing;
  EXPECT_NE(missing.find("hbm_GBps"), std::string::npos) << missing;
  m["custom_allreduce"]["eager_copy"]["hbm_GBps"] = 0;
  const std::string zero = bad_input([&] { parse_fabric(m, "x"); });
  EXPECT_NE(zero.find("hbm_GBps"), std::string::npos) << zero;
  m["custom_allreduce"]["eager_copy"]["hbm_GBps"] = 2814;
  const Fabric f = parse_fabric(m, "x");
  ASSERT_TRUE(f.custom_ar && f.custom_ar->eager_copy);
  EXPECT_DOUBLE_EQ(f.custom_ar->eager_copy->hbm_GBps, 2814);
  m["custom_allreduce"]["eager_copy"].erase("source");
  EXPECT_THROW(parse_fabric(m, "x"), BadInput);
}

// An eager call (collectives --eager) adds nvlink4's copy to a custom kernel: its fitted fixed
// part to the latency, and its bytes, read and written once each at the preset's HBM rate, to
// the data term (at 4 MB: 2 x 4 MiB / 2814 GB/s, 2.98 us, by hand); NCCL takes any input and is
// unchanged; a preset without eager_copy (nvlink3 carries none) refuses it by the flag's name.
TEST(CustomAllReduce, AnEagerCallAddsTheCopy) {
  const Fabric f = load_fabric("nvlink4", kConfigs);
  const int64_t size = 4 * kMiB;
  const ModelTime k = at(f, size, 8, ModelAlgo::twoshot);
  const ModelTime e = eager_call(f, k, size);
  const double latency = f.custom_ar->eager_copy->latency_us * 1e-6;
  EXPECT_NEAR(e.latency_s - k.latency_s, latency, 1e-12);
  EXPECT_NEAR(e.time_s - k.time_s, latency + 2.0 * 4194304 / 2814e9, 1e-12);
  EXPECT_NEAR(e.time_s, e.latency_s + size / (e.algbw_GBps * 1e9), 1e-12);
  EXPECT_LT(e.algbw_GBps, k.algbw_GBps);
  const ModelTime n = at(f, size, 8, ModelAlgo::nccl);
  EXPECT_DOUBLE_EQ(eager_call(f, n, size).time_s, n.time_s);
  const Fabric a100 = load_fabric("nvlink3", kConfigs);
  const std::string why =
      bad_input([&] { eager_call(a100, at(a100, 32 * kKiB, 8, ModelAlgo::oneshot), 32 * kKiB); });
  EXPECT_NE(why.find("--eager"), std::string::npos) << why;
}

}  // namespace
}  // namespace tpb
