// The model backend's measured inputs: a profile's efficiency table (layers/hardware.h) and a
// fabric's measured all-reduce curve (collectives/model/fabric.h), against hand counts.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "layers/hardware.h"

namespace tpb {
namespace {

nlohmann::json profile(const std::vector<nlohmann::json>& list) {
  const nlohmann::json points = list;  // an array even of one (a braced list of one is not)
  return {{"name", "t"},
          {"peak_flops", {{"fp32", 1e11}}},
          {"peak_bw", 5e10},
          {"source", "test"},
          {"efficiency", {{"source", "hand"}, {"context", 1024}, {"points", points}}}};
}

nlohmann::json pt(const char* op, const char* phase, int tp, int64_t tokens, double f) {
  return {{"op", op}, {"phase", phase}, {"tp", tp}, {"tokens", tokens}, {"fraction", f}};
}

TEST(OpEfficiency, LinearInLog2TokensClampedAtTheEnds) {
  const Hardware h = hardware_from_json(
      profile({pt("qkv_proj", "decode", 2, 1, 0.6), pt("qkv_proj", "decode", 2, 16, 0.9),
               pt("qkv_proj", "decode", 2, 64, 0.8)}),
      "t");
  const OpEfficiency& e = h.efficiency;
  EXPECT_DOUBLE_EQ(e.fraction("qkv_proj", "decode", 2, 1), 0.6);
  EXPECT_DOUBLE_EQ(e.fraction("qkv_proj", "decode", 2, 4), 0.6 + 0.3 * 2 / 4);   // log2 4 of 0..4
  EXPECT_DOUBLE_EQ(e.fraction("qkv_proj", "decode", 2, 32), 0.9 - 0.1 * 1 / 2);  // 4..6
  EXPECT_DOUBLE_EQ(e.fraction("qkv_proj", "decode", 2, 256), 0.8);               // past the end
  EXPECT_DOUBLE_EQ(e.fraction("o_proj", "decode", 2, 4), 1.0);     // no points: the roofline
  EXPECT_DOUBLE_EQ(e.fraction("qkv_proj", "prefill", 2, 4), 1.0);  // phases kept apart
  EXPECT_EQ(e.context, 1024);
}

TEST(OpEfficiency, NearestTpDegreeInLog2) {
  const Hardware h = hardware_from_json(
      profile({pt("attention", "decode", 1, 1, 0.3), pt("attention", "decode", 8, 1, 0.5)}), "t");
  EXPECT_DOUBLE_EQ(h.efficiency.fraction("attention", "decode", 2, 1), 0.3);  // |1| < |2|
  EXPECT_DOUBLE_EQ(h.efficiency.fraction("attention", "decode", 4, 1), 0.5);  // |1| < |2|
  EXPECT_DOUBLE_EQ(h.efficiency.fraction("attention", "decode", 16, 1), 0.5);
}

TEST(OpEfficiency, ATieBetweenTwoDegreesTakesTheSmallerWhateverTheOrder) {
  // TP 4 is as near to 2 as to 8 (one log2 step each): the TP 2 curve, listed first or last.
  const auto two = {pt("attention", "decode", 2, 1, 0.3), pt("attention", "decode", 2, 64, 0.7)};
  const auto eight = {pt("attention", "decode", 8, 1, 0.5), pt("attention", "decode", 8, 64, 0.9)};
  std::vector<nlohmann::json> a(two), b(eight);
  a.insert(a.end(), eight.begin(), eight.end());
  b.insert(b.end(), two.begin(), two.end());
  const Hardware first = hardware_from_json(profile(a), "t"),
                 last = hardware_from_json(profile(b), "t");
  for (const int64_t tokens : {1, 8, 64}) {
    EXPECT_DOUBLE_EQ(first.efficiency.fraction("attention", "decode", 4, tokens),
                     last.efficiency.fraction("attention", "decode", 4, tokens));
    EXPECT_DOUBLE_EQ(last.efficiency.fraction("attention", "decode", 4, tokens),
                     last.efficiency.fraction("attention", "decode", 2, tokens));
  }
}

TEST(OpEfficiency, SaysWhereALookupLeavesTheGrid) {
  const Hardware h = hardware_from_json(
      profile({pt("gate_up_proj", "decode", 1, 1, 0.6), pt("gate_up_proj", "decode", 1, 64, 0.8),
               pt("gate_up_proj", "decode", 2, 1, 0.5), pt("gate_up_proj", "decode", 2, 16, 0.7)}),
      "t");
  const OpEfficiency& e = h.efficiency;
  EXPECT_EQ(e.outside_grid("decode", 1, 1), "");
  EXPECT_EQ(e.outside_grid("decode", 1, 64), "");
  EXPECT_EQ(e.outside_grid("decode", 2, 8), "");
  EXPECT_EQ(e.outside_grid("prefill", 8, 4096), "");  // no prefill points: nothing carried over
  // TP 2's own grid ends at 16 tokens, though TP 1's runs to 64.
  EXPECT_EQ(e.outside_grid("decode", 2, 32),
            "32 tokens per step lie above the grid's 1..16: each op's time is extended along "
            "the line through its two largest points (time against roofline time)");
  EXPECT_EQ(e.outside_grid("decode", 8, 4), "no TP 8 point in decode: TP 2's fractions are used");
  EXPECT_EQ(e.outside_grid("decode", 8, 256),
            "no TP 8 point in decode: TP 2's fractions are used; 256 tokens per step lie "
            "above the grid's 1..16: each op's time is extended along the line through its "
            "two largest points (time against roofline time)");
  EXPECT_EQ(e.outside_grid("decode", 1, 0),
            "0 tokens per step lie below the grid's 1..64: the smallest point's fractions are "
            "held");
  EXPECT_EQ(e.outside_grid("decode", 8, -1),  // the TP degree alone
            "no TP 8 point in decode: TP 2's fractions are used");
}

TEST(OpEfficiency, RoundTripsAndRefusesBadFractions) {
  const nlohmann::json j = profile({pt("swiglu", "prefill", 1, 128, 0.1)});
  const Hardware h = hardware_from_json(j, "t");
  const Hardware back = hardware_from_json(nlohmann::json::parse(hardware_to_json(h).dump()), "t");
  ASSERT_EQ(back.efficiency.points.size(), 1u);
  EXPECT_EQ(back.efficiency.points[0].op, "swiglu");
  EXPECT_DOUBLE_EQ(back.efficiency.fraction("swiglu", "prefill", 1, 128), 0.1);
  for (double bad : {0.0, -1.0, 101.0}) {
    try {
      hardware_from_json(profile({pt("swiglu", "prefill", 1, 128, bad)}), "t");
      ADD_FAILURE() << "fraction " << bad << " accepted";
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("efficiency.points[0].fraction"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(hardware_from_json(profile({pt("swiglu", "verify", 1, 1, 0.5)}), "t"), BadInput);
}

nlohmann::json measured(int ranks) {
  return {{"gpus_per_node", ranks},
          {"measured",
           {{"collective", "mpi"},
            {"ranks", ranks},
            {"all_reduce", {{1024, 10e-6}, {4096, 40e-6}, {65536, 160e-6}}},
            {"source", "hand"}}}};
}

TEST(MeasuredFabric, LogLogBetweenPointsBandwidthPastTheLast) {
  const Fabric f = parse_fabric(measured(2), "t");
  ASSERT_TRUE(f.measured);
  const MeasuredCurve& c = *f.measured;
  EXPECT_DOUBLE_EQ(c.time_s(512), 10e-6);     // below the first: its time
  EXPECT_NEAR(c.time_s(2048), 20e-6, 1e-15);  // log-log midway between 10 and 40 us
  // 16384 is 2/4 of the way from 4096 to 65536 in log: 40 x (160/40)^0.5 = 80 us.
  EXPECT_NEAR(c.time_s(16384), 80e-6, 1e-15);
  EXPECT_NEAR(c.time_s(131072), 320e-6, 1e-15);  // twice the last size at its bandwidth
  const ModelTime t = model_collective(f, CollKind::all_reduce, 2048, {2, 1}, ModelAlgo::automatic);
  EXPECT_EQ(t.algo, ModelAlgo::measured);
  EXPECT_NEAR(t.time_s, 20e-6, 1e-15);
}

TEST(MeasuredFabric, RefusesOtherGroupsKindsAndAlgorithms) {
  const Fabric f = parse_fabric(measured(2), "t");
  auto says = [](auto&& fn, const char* field) {
    try {
      fn();
      ADD_FAILURE() << "accepted";
    } catch (const BadInput& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field, 0), 0u) << e.what();
    }
  };
  says(
      [&] {
        model_collective(f, CollKind::all_reduce, 64, {4, 1}, ModelAlgo::automatic);
      },
      "--topology");
  says(
      [&] {
        model_collective(f, CollKind::all_gather, 64, {2, 1}, ModelAlgo::automatic);
      },
      "--topology");
  says([&] { model_collective(f, CollKind::all_reduce, 64, {2, 1}, ModelAlgo::ring); }, "--algo");
  nlohmann::json both = measured(2);
  both["intra"] = {{"hw", "pci"}, {"line_GBps", 10}, {"efficiency", 0.5}, {"source", "x"}};
  says([&] { parse_fabric(both, "t"); }, "--topology");
  nlohmann::json down = measured(2);
  down["measured"]["all_reduce"] = {{4096, 1e-5}, {1024, 1e-5}};
  says([&] { parse_fabric(down, "t"); }, "--topology");
}

}  // namespace
}  // namespace tpb
