// The printers' reader (record/json/results_doc_json.h) over the golden results the previous
// binary wrote: each point read as its kind's record, each section as its record; a point of
// no known kind keeps its head, a context that does not read is none, a curve that does not
// read is an error naming the file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/errors.h"
#include "harness/record/json/results_doc_json.h"
#include "harness/record/json/results_json.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

oj golden(const std::string& name) {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return oj::parse(s.str());
}

TEST(ResultsDoc, RunGoldenReadsAsRecords) {
  const oj j = golden("results_run.json");
  const ResultsDoc d = results_doc_from_json(j, "t", "run");
  ASSERT_EQ(d.points.size(), 1u);
  ASSERT_TRUE(d.points[0].model);
  EXPECT_FALSE(d.points[0].coll);
  EXPECT_EQ(to_json(*d.points[0].model), j["points"][0]);  // the writer's own fields
  ASSERT_TRUE(d.context);
  EXPECT_EQ(to_json(*d.context), j["context"]);
  ASSERT_TRUE(d.diagnosis);
  EXPECT_EQ(to_json(*d.diagnosis), j["diagnosis"]);
  EXPECT_FALSE(d.curve);
  EXPECT_FALSE(collectives_points(d));
  EXPECT_EQ(model_points(d).size(), 1u);
  // The head: the params as written, the status, and diagnose's phase, batch and tp.
  const PointHead& h = d.points[0].head;
  EXPECT_EQ(h.params, j["points"][0]["params"]);
  EXPECT_EQ(h.status, "ok");
  EXPECT_EQ(h.phase, "decode");
  EXPECT_EQ(h.batch, j["points"][0]["params"]["batch"].get<int64_t>());
  EXPECT_EQ(h.tp, 2);
}

TEST(ResultsDoc, CollectivesGoldenReadsAsSizes) {
  const oj j = golden("results_collectives.json");
  const ResultsDoc d = results_doc_from_json(j, "t", "coll");
  const auto coll = collectives_points(d);
  ASSERT_TRUE(coll);
  EXPECT_EQ(coll->size(), j["points"].size());
  EXPECT_TRUE(model_points(d).empty());
  ASSERT_TRUE(d.collectives_summary);
  EXPECT_EQ(to_json(*d.collectives_summary), j[coll_summary_section()]);
  EXPECT_EQ(d.points[0].head.phase, "?");  // a collectives size has no phase
}

// A document mixing kinds and entries no writer made: each keeps its place and its head.
TEST(ResultsDoc, OtherPointsKeepTheirHead) {
  oj j = golden("results_run.json");
  j["points"].push_back(golden("results_collectives.json")["points"][0]);
  j["points"].push_back({{"params", {{"phase", "decode"}, {"batch", 3}}}, {"status", "ok"}});
  j["points"].push_back({{"status", 7}, {"reason", "boom"}});
  j["points"].push_back(42);
  j.erase("context");
  const ResultsDoc d = results_doc_from_json(j, "t", "mixed");
  ASSERT_EQ(d.points.size(), 5u);
  EXPECT_TRUE(d.points[0].model);
  EXPECT_TRUE(d.points[1].coll);
  EXPECT_FALSE(collectives_points(d));
  EXPECT_FALSE(d.context);
  const PointHead& h = d.points[2].head;
  EXPECT_FALSE(d.points[2].model || d.points[2].coll);
  EXPECT_EQ(h.phase, "decode");
  EXPECT_EQ(h.batch, 3);
  EXPECT_EQ(h.tp, 0);
  EXPECT_EQ(d.points[3].head.status, "?");  // not text: absent
  EXPECT_EQ(d.points[3].head.reason, "boom");
  EXPECT_EQ(d.points[4].head.params, oj::object());
}

TEST(ResultsDoc, ACurveThatDoesNotReadNamesTheFile) {
  oj j = golden("results_run.json");
  j[curve_section()] = {{"x", "concurrency"}};
  try {
    results_doc_from_json(j, "diagnose", "somewhere/results.json");
    FAIL() << "a curve without its points read";
  } catch (const BadInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("diagnose: 'somewhere/results.json': curve:"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace tpb
