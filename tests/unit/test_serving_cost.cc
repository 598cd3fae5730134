// Cost per million tokens (serving_cost.cc, results 1.25.0) pinned to hand-computed
// numbers, --price parsing and matching, a profile's price_per_hour, and the figure's way
// through the curve, results.json, compare and the exports.
#include <gtest/gtest.h>

#include <cmath>

#include "base/errors.h"
#include "harness/record/json/results_json.h"
#include "harness/record/whatif/whatif_json.h"
#include "harness/report/compare/compare.h"
#include "harness/report/export/export_csv.h"
#include "harness/report/export/export_table.h"
#include "harness/report/export/openmetrics.h"
#include "harness/report/serve/serve_table.h"
#include "harness/serve/curve.h"
#include "harness/serve/serve_metrics.h"
#include "layers/hardware.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

TEST(ServingCost, HandComputed) {
  // 8 GPUs x $3.50/h = $28/h = $0.0077778/s; at 10,000 tokens/s a million tokens take 100 s:
  // $0.77778.
  EXPECT_NEAR(*usd_per_mtok(8, 3.5, 1e4), 0.7777777777777778, 1e-15);
  // 2 GPUs x $2.50/h = $5/h; 250 tokens/s -> 4000 s per million tokens = 1.1111 h: $5.5556.
  EXPECT_NEAR(*usd_per_mtok(2, 2.5, 250), 5.555555555555555, 1e-12);
  EXPECT_FALSE(usd_per_mtok(8, 3.5, 0));    // nothing served: no cost per token, never inf
  EXPECT_FALSE(usd_per_mtok(8, 3.5, NAN));  // unmeasured
}

TEST(ServingCost, OutputAndTotal) {
  const GpuPrice h200{"h200-sxm", 3.5, "--price"};
  // 4 GPUs at $3.50/h = $14/h; 1000 output tokens/s -> $3.8889, 5000 total tokens/s -> $0.77778.
  const CostPerMtok c = cost_per_mtok(h200, 4, 1000.0, 5000.0);
  EXPECT_NEAR(*c.output_usd, 3.888888888888889, 1e-12);
  EXPECT_NEAR(*c.total_usd, 0.7777777777777778, 1e-12);
  EXPECT_EQ(c.gpus, 4);
  EXPECT_FALSE(c.reason);
  const CostPerMtok none = cost_per_mtok(h200, 4, 0.0, 5000.0);
  EXPECT_FALSE(none.output_usd);
  ASSERT_TRUE(none.reason);
  EXPECT_NE(none.reason->find("output tokens/s is 0"), std::string::npos) << *none.reason;
  // Written: the null figure as null beside its reason, not infinity.
  PointRecord rec;
  rec.metrics.emplace().cost_per_mtok = none;
  const oj j = to_json(rec)["metrics"]["cost_per_mtok"];
  EXPECT_TRUE(j["output_usd"].is_null());
  EXPECT_NEAR(j["total_usd"].get<double>(), 0.7777777777777778, 1e-12);
  EXPECT_TRUE(j.contains("reason"));
}

TEST(ServingCost, ParsePrices) {
  const auto p = parse_prices("h100-sxm=2.5,h200-sxm=3.5");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].gpu, "h200-sxm");
  EXPECT_DOUBLE_EQ(p[1].usd_per_hour, 3.5);
  EXPECT_EQ(prices_text(p), "h100-sxm=2.5,h200-sxm=3.5");
  EXPECT_TRUE(parse_prices("").empty());
  for (const char* bad : {"h200-sxm=-1", "h200-sxm=abc", "h200-sxm=", "=3.5", "h200-sxm",
                          "h200-sxm=3.5x", "h200-sxm=inf", "a=1,a=2"}) {
    try {
      parse_prices(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const BadInput& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--price: ", 0), 0u) << e.what();
    }
  }
}

TEST(ServingCost, PriceForTheHardware) {
  const auto given = parse_prices("h100-sxm=2.5,h200-sxm=3.5");
  EXPECT_DOUBLE_EQ(price_for(given, "h200-sxm", std::nullopt)->usd_per_hour, 3.5);
  EXPECT_DOUBLE_EQ(price_for(given, "h100-sxm:datasheet", std::nullopt)->usd_per_hour, 2.5);
  EXPECT_THROW(price_for(given, "b200", std::nullopt), BadInput);  // priced, but not this GPU
  const GpuPrice profile{"b200", 6, "hardware profile b200: someone"};
  EXPECT_FALSE(price_for({}, "b200", std::nullopt));  // no price anywhere: no cost
  EXPECT_DOUBLE_EQ(price_for({}, "b200", profile)->usd_per_hour, 6);
  // --price wins over the profile's own.
  EXPECT_DOUBLE_EQ(price_for(parse_prices("b200=5"), "b200", profile)->usd_per_hour, 5);
}

TEST(ServingCost, HardwareProfilePrice) {
  oj j = {{"name", "x"}, {"peak_flops", {{"bf16", 1e15}}}, {"peak_bw", 3e12}, {"source", "s"}};
  EXPECT_FALSE(hardware_from_json(j, "x").price_per_hour);
  j["price_per_hour"] = {{"usd", 3.5}, {"source", "a published rate card"}};
  const Hardware h = hardware_from_json(j, "x");
  ASSERT_TRUE(h.price_per_hour);
  EXPECT_DOUBLE_EQ(h.price_per_hour->usd, 3.5);
  EXPECT_EQ(hardware_to_json(h)["price_per_hour"]["source"], "a published rate card");
  j["price_per_hour"] = {{"usd", 3.5}};  // a price needs its source
  EXPECT_THROW(hardware_from_json(j, "x"), BadInput);
  j["price_per_hour"] = {{"usd", -1}, {"source", "s"}};
  EXPECT_THROW(hardware_from_json(j, "x"), BadInput);
}

CurveInput load(double x, double attainment, std::optional<CostPerMtok> cost) {
  CurveInput c;
  c.x = x;
  c.status = "ok";
  c.total_tokens_per_s = 100 * x;
  c.itl_p95_s = 0.01;
  c.slo_attainment = attainment;
  c.gpus = 2;
  c.cost = cost;
  return c;
}

TEST(ServingCost, SloCapacityCarriesTheCostAtX) {
  const GpuPrice p{"h100-sxm", 2.5, "--price"};
  // Load 4 is the last to meet 90%: its cost, not load 8's.
  const Curve c = make_curve("concurrency", {load(1, 1, cost_per_mtok(p, 2, 100.0, 200.0)),
                                             load(4, 0.95, cost_per_mtok(p, 2, 400.0, 800.0)),
                                             load(8, 0.5, cost_per_mtok(p, 2, 500.0, 1000.0))});
  ASSERT_TRUE(c.slo && c.slo->cost);
  // 2 x 2.5 / 3600 / 400 x 1e6 = 3.4722
  EXPECT_NEAR(*c.slo->cost->output_usd, 3.4722222222222222, 1e-12);
  const Curve unpriced = make_curve("concurrency", {load(1, 1, std::nullopt)});
  EXPECT_FALSE(unpriced.slo->cost);
}

// A priced serve point, as `tpbench serve` writes it.
PointRecord serve_point(std::optional<CostPerMtok> cost) {
  PointRecord p;
  p.params.phase = "serve";
  p.params.model = "tiny";
  p.params.tp = 2;
  p.params.serve = ServeParamsRecord{.load = "concurrency", .x = 4};
  MetricsRecord m;
  m.output_tokens_per_s = 400;
  m.total_tokens_per_s = 800;
  m.cost_per_mtok = cost;
  p.metrics = m;
  return p;
}

TEST(ServingCost, ExportsAndCompareCarryIt) {
  const GpuPrice p{"h100-sxm", 2.5, "--price"};
  ResultsDoc doc;
  const PointRecord priced = serve_point(cost_per_mtok(p, 2, 400.0, 800.0));
  doc.points.push_back({point_head_from_json(to_json(priced)), priced, {}});
  const std::string om = openmetrics_text(export_points("r", doc));
  // 2 x 2.5 / 3600 / 400 x 1e6 = 3.47222..., over 800 tokens/s half of it.
  EXPECT_NE(om.find("tpbench_cost_usd_per_million_output_tokens{"), std::string::npos) << om;
  EXPECT_NE(om.find("} 3.4722222222222"), std::string::npos) << om;
  EXPECT_NE(om.find("tpbench_cost_usd_per_million_tokens{"), std::string::npos) << om;
  EXPECT_NE(om.find("} 1.7361111111111"), std::string::npos) << om;
  const std::string csv = csv_text(export_points("r", doc));
  EXPECT_NE(csv.find("cost_usd_per_million_output_tokens"), std::string::npos) << csv;

  ResultsDoc plain;
  const PointRecord unpriced = serve_point(std::nullopt);
  plain.points.push_back({point_head_from_json(to_json(unpriced)), unpriced, {}});
  EXPECT_EQ(openmetrics_text(export_points("r", plain)).find("tpbench_cost_"), std::string::npos);
  EXPECT_FALSE(to_json(unpriced)["metrics"].contains("cost_per_mtok"));  // absent, not 0

  const std::string text = format_compare(compare_runs({{"a", doc}, {"b", doc}}));
  EXPECT_NE(text.find("$/Mtok out"), std::string::npos) << text;
  EXPECT_NE(text.find("3.4722"), std::string::npos) << text;
  EXPECT_EQ(format_compare(compare_runs({{"a", plain}, {"b", plain}})).find("$/Mtok"),
            std::string::npos);
}

TEST(ServingCost, ReportLines) {
  const CostPerMtok c = cost_per_mtok({"h100-sxm", 2.5, "--price"}, 2, 400.0, 800.0);
  EXPECT_EQ(cost_text(c),
            "$3.472 per million output tokens, $1.736 per million tokens (2 GPUs at $2.5/h, "
            "--price)");
  CurveRecord curve;
  curve.x = "concurrency";
  curve.points.push_back({4, 800, 0.01, 0.1, "ok", c});
  const std::string md = serve_curve_md(curve);
  EXPECT_NE(md.find("| 4 | 800.0 | 10.0 | 3.472 | 1.736 | 2 GPUs at $2.5/h (--price) |"),
            std::string::npos)
      << md;
}

TEST(ServingCost, WhatifWritesItOnlyWhenPriced) {
  Counterfactual c{"no_jitter", 0, {}, {}, {}, {}, ""};
  c.figures.tokens_per_s = 500;
  c.measured.tokens_per_s = 400;
  const oj plain = to_json(WhatifRecord{{c}})["counterfactuals"][0];
  EXPECT_FALSE(plain.contains("cost_per_mtok_output_usd"));  // unpriced: absent, not null
  // 2 GPUs at $2.50/h: 3.4722 at 400 tokens/s measured, 2.7778 at the fix's 500: -20%.
  c.measured.cost_per_mtok_usd = usd_per_mtok(2, 2.5, 400);
  c.figures.cost_per_mtok_usd = usd_per_mtok(2, 2.5, 500);
  const oj j = to_json(WhatifRecord{{c}});
  const oj& cf = j["counterfactuals"][0];
  EXPECT_NEAR(cf["cost_per_mtok_output_usd"].get<double>(), 2.7777777777777777, 1e-12);
  EXPECT_NEAR(cf["delta"]["cost_per_mtok_output_usd"].get<double>(), -0.2, 1e-12);
  EXPECT_NEAR(cf["delta"]["measured"]["cost_per_mtok_output_usd"].get<double>(), 3.4722222222222222,
              1e-12);
  EXPECT_NEAR(*whatif_from_json(j).counterfactuals[0].figures.cost_per_mtok_usd, 2.7777777777777777,
              1e-12);
}

}  // namespace
}  // namespace tpb
