// Sweep axis grammar and expansion: lists, ranges, sizes, the product order and the phase
// rules, pinned to hand-written expectations (harness/config/axis.h, harness/config/sweep_plan.h).
#include <gtest/gtest.h>

#include "base/errors.h"
#include "harness/config/axis.h"
#include "harness/config/sweep_plan.h"
#include "harness/record/json/echo_json.h"

namespace tpb {
namespace {

using V = std::vector<int64_t>;

TEST(IntAxis, ListsAndRanges) {
  EXPECT_EQ(expand_int_axis("1,2,4,8", "--batch"), (V{1, 2, 4, 8}));
  EXPECT_EQ(expand_int_axis("1..256:x2", "--batch"), (V{1, 2, 4, 8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(expand_int_axis("1..16:+4", "--batch"), (V{1, 5, 9, 13}));  // 17 > 16 stops it
  EXPECT_EQ(expand_int_axis("3..5", "--batch"), (V{3, 4, 5}));
  EXPECT_EQ(expand_int_axis("1..10:*3", "--batch"), (V{1, 3, 9}));
  EXPECT_EQ(expand_int_axis("512, 2048", "--context"), (V{512, 2048}));
  // Items mix, order is kept, duplicates go.
  EXPECT_EQ(expand_int_axis("64,1..8:x2,4", "--batch"), (V{64, 1, 2, 4, 8}));
  EXPECT_EQ(expand_int_axis("7..7:x2", "--batch"), (V{7}));
}

TEST(IntAxis, RefusesMalformed) {
  for (const char* bad : {"", "1,,2", "a", "1..", "..4", "4..1", "1..8:x1", "0..8:x2", "1..8:+0",
                          "1..8:y2", "1..8:x", "1.5", "1..1000000:+1"})
    EXPECT_THROW(expand_int_axis(bad, "--batch"), BadInput) << bad;
  try {
    expand_int_axis("4..1", "--batch");
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("--batch"), std::string::npos);  // names the flag
  }
}

TEST(IntAxis, NoOverflowNearTheTop) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(expand_int_axis("4611686018427387904..9223372036854775807:x2", "--x").size(), 1u);
  EXPECT_EQ(expand_int_axis(std::to_string(big - 1) + ".." + std::to_string(big) + ":+5", "--x"),
            (V{big - 1}));
}

TEST(StringAxis, SplitsTrimsAndDedupes) {
  EXPECT_EQ(expand_string_axis("decode, prefill,decode", "--phase"),
            (std::vector<std::string>{"decode", "prefill"}));
  EXPECT_EQ(expand_string_axis("none;rank=1:slowdown=1.3,rank=0:jitter=0.1@50", "--inject", ';'),
            (std::vector<std::string>{"none", "rank=1:slowdown=1.3,rank=0:jitter=0.1@50"}));
  EXPECT_THROW(expand_string_axis("a,,b", "--dtype"), BadInput);
}

TEST(Sizes, NcclTestsSuffixes) {
  EXPECT_EQ(parse_size_suffix("8", "-b"), 8);
  EXPECT_EQ(parse_size_suffix("1K", "-b"), 1024);
  EXPECT_EQ(parse_size_suffix("4M", "-e"), 4 << 20);
  EXPECT_EQ(parse_size_suffix("2g", "-e"), int64_t{2} << 30);
  for (const char* bad : {"", "K", "1.5M", "-1", "1T", "99999999999999999999"})
    EXPECT_THROW(parse_size_suffix(bad, "-b"), BadInput) << bad;
  EXPECT_EQ(format_size(1024), "1K");
  EXPECT_EQ(format_size(4 << 20), "4M");
  EXPECT_EQ(format_size(1000), "1000");
}

TEST(SweepPlan, ProductOrderBatchFastest) {
  nlohmann::json cfg = {{"batch", "1,2"}, {"tp", "1,2"}, {"phase", "decode"}, {"out", "x"}};
  const SweepPlan p = plan_sweep(cfg);
  ASSERT_EQ(p.points.size(), 4u);
  // tp is outside batch: (tp1, b1), (tp1, b2), (tp2, b1), (tp2, b2).
  EXPECT_EQ(p.points[0]["tp"], "1");
  EXPECT_EQ(p.points[0]["batch"], "1");
  EXPECT_EQ(p.points[1]["batch"], "2");
  EXPECT_EQ(p.points[2]["tp"], "2");
  EXPECT_EQ(p.points[3]["out"], "x");  // non-axis keys pass through
  ASSERT_EQ(p.axes.size(), 3u);
  EXPECT_EQ(p.axes[0].key, "tp");
  EXPECT_EQ(p.axes[2].key, "batch");
}

// A points list runs its entries in order, each over the shared keys; the axes are the keys the
// entries set, with every value they take (a point that leaves one to the shared settings
// shows the shared value).
TEST(SweepPlan, PointsListInOrder) {
  nlohmann::json cfg = {{"model", "tiny"},
                        {"check", true},
                        {"points",
                         {{{"phase", "decode"}, {"batch", 4}},
                          {{"phase", "prefill"}, {"prompt", 512}, {"check", false}}}}};
  const SweepPlan p = plan_sweep(cfg);
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_TRUE(p.listed);
  EXPECT_EQ(p.points[0]["batch"], 4);
  EXPECT_EQ(p.points[0]["check"], true);
  EXPECT_EQ(p.points[1]["check"], false);
  EXPECT_EQ(p.points[1]["model"], "tiny");
  EXPECT_FALSE(p.points[0].contains("points"));
  ASSERT_EQ(p.axes.size(), 4u);  // batch, phase, check, prompt
  for (const SweepAxis& a : p.axes) {
    if (a.key == "check") EXPECT_EQ(a.values, (std::vector<std::string>{"true", "false"}));
    if (a.key == "prompt") EXPECT_EQ(a.values, (std::vector<std::string>{"null", "512"}));
  }
  EXPECT_EQ(sweep_plan_to_json(p)["points"], 2);
  for (const nlohmann::json bad : {nlohmann::json::array(), nlohmann::json({1, 2})}) {
    nlohmann::json c = {{"points", bad}};
    EXPECT_THROW(plan_sweep(c), BadInput);
  }
  nlohmann::json both = {{"batch", {1, 2}}, {"points", {{{"phase", "decode"}}}}};
  EXPECT_THROW(plan_sweep(both), BadInput);
}

TEST(SweepPlan, PhaseDropsTheOtherPhasesAxis) {
  nlohmann::json cfg = {
      {"phase", "decode,prefill"}, {"context", "512,2048"}, {"prompt", "128,256"}};
  const SweepPlan p = plan_sweep(cfg);
  // decode x 2 contexts + prefill x 2 prompts, not 2 x 2 x 2.
  ASSERT_EQ(p.points.size(), 4u);
  EXPECT_FALSE(p.points[0].contains("prompt"));
  EXPECT_EQ(p.points[1]["context"], "2048");
  EXPECT_FALSE(p.points[2].contains("context"));
  EXPECT_EQ(p.points[3]["prompt"], "256");
}

TEST(SweepPlan, InjectAlternativesAndRepeatedFlags) {
  // One flag: alternatives. Two flags: their product, combined like run's repeated --inject.
  nlohmann::json one = {{"inject", "none;rank=1:slowdown=1.3"}};
  SweepPlan p = plan_sweep(one);
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_FALSE(p.points[0].contains("inject"));
  EXPECT_EQ(p.points[1]["inject"], nlohmann::json::array({"rank=1:slowdown=1.3"}));
  nlohmann::json two = {{"inject", {"none;rank=1:slowdown=1.3", "rank=0:host_delay=10"}}};
  p = plan_sweep(two);
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_EQ(p.points[0]["inject"], nlohmann::json::array({"rank=0:host_delay=10"}));
  EXPECT_EQ(p.points[1]["inject"],
            nlohmann::json::array({"rank=1:slowdown=1.3", "rank=0:host_delay=10"}));
  EXPECT_EQ(point_label(p.points[1], p), "inject=rank=1:slowdown=1.3,rank=0:host_delay=10");
}

TEST(SweepPlan, JsonArraysAndSinglePoint) {
  nlohmann::json cfg = {{"batch", {1, "4..8:x2"}}, {"dtype", {"fp32"}}};
  const SweepPlan p = plan_sweep(cfg);
  ASSERT_EQ(p.points.size(), 3u);
  EXPECT_EQ(p.points[2]["batch"], "8");
  EXPECT_EQ(axis_values_json(p.axes[1]), nlohmann::ordered_json::array({1, 4, 8}));
  EXPECT_EQ(plan_sweep(nlohmann::json::object()).points.size(), 1u);
  EXPECT_THROW(plan_sweep(nlohmann::json{{"batch", nlohmann::json::array()}}), BadInput);
}

}  // namespace
}  // namespace tpb
