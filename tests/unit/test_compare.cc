// compare's record and compare.json on hand-made runs: rows match points across runs, ratios
// are against the first run that has the point (null against a base of 0), and a point that
// is not ok has a status and no figures.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/record/json/compare_json.h"
#include "harness/record/json/results_json.h"
#include "harness/report/compare/compare.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

PointRecord point(const std::string& topology, int64_t batch, double tokens_per_s, double mbu) {
  PointRecord p;
  p.params.phase = "decode";
  p.params.model = "tiny";
  p.params.batch = batch;
  p.params.tp = 2;
  p.params.topology = topology;
  MetricsRecord m;
  m.tokens_per_s = tokens_per_s;
  m.mbu = mbu;
  p.metrics = m;
  return p;
}

CompareInput run_of(const std::string& path, const std::vector<PointRecord>& points) {
  CompareInput in{path, {}};
  for (const auto& p : points) in.doc.points.push_back({point_head_from_json(to_json(p)), p, {}});
  return in;
}

TEST(Compare, RowsRatiosAndTheDocument) {
  PointRecord oom = point("tcp", 8, 0, 0);
  oom.status = PointStatus::oom;
  oom.metrics.reset();
  const CompareRecord c =
      compare_runs({run_of("a", {point("shm", 1, 100, 0), point("shm", 8, 400, 0.5)}),
                    run_of("b", {point("tcp", 1, 50, 0.25), oom})});
  // topology is constant in each run and differs between them: a label, not part of the key.
  EXPECT_EQ(c.label_fields, std::vector<std::string>{"topology"});
  ASSERT_EQ(c.runs.size(), 2u);
  EXPECT_EQ(c.runs[1].label, "topology=tcp");
  ASSERT_EQ(c.rows.size(), 2u);
  const CompareRow& b1 = c.rows[0];
  EXPECT_EQ(b1.key["batch"], 1);
  ASSERT_TRUE(b1.entries[1].ratio);
  EXPECT_DOUBLE_EQ(figure(*b1.entries[1].ratio, "tokens_per_s"), 0.5);
  EXPECT_TRUE(std::isnan(figure(*b1.entries[1].ratio, "mbu")));  // against 0: no ratio
  EXPECT_EQ(c.rows[1].entries[1].status, "oom");
  EXPECT_FALSE(c.rows[1].entries[1].metrics);

  const oj j = to_json(c);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"label_fields", "runs", "rows", "ratio_base"}));
  EXPECT_EQ(j["rows"][0]["entries"][1]["ratio"]["mbu"].dump(), "null");  // NaN writes null
  EXPECT_FALSE(j["rows"][1]["entries"][1].contains("metrics"));
  EXPECT_EQ(j["runs"][0]["points"], 2);
  const std::string text = format_compare(c);
  EXPECT_NE(text.find("  B    oom\n"), std::string::npos) << text;
  EXPECT_NE(text.find("0.50x"), std::string::npos) << text;
}

}  // namespace
}  // namespace tpb
