// Labels over sweeps (issue 33): report.md titles a point by every param that varies across
// its document (two points that differ only in inject or topology never read the same), a
// serve point by its load; compare's row heading keeps a field it leaves out (steps, model)
// when the rows differ in it.
#include <gtest/gtest.h>

#include "harness/record/json/results_json.h"
#include "harness/report/compare/compare.h"
#include "harness/report/report_md.h"

namespace tpb {
namespace {

PointRecord decode_point(const std::string& topology, const std::vector<std::string>& inject,
                         int64_t steps) {
  PointRecord p;
  p.params.phase = "decode";
  p.params.model = "tiny";
  p.params.batch = 4;
  p.params.context = 128;
  p.params.tp = 2;
  p.params.dtype = "fp32";
  p.params.backend = "cpu";
  p.params.topology = topology;
  p.params.inject = inject;
  p.params.steps = steps;
  p.status = PointStatus::skipped;  // no figures needed: the title is the subject
  p.reason = "hand-made";
  return p;
}

ResultsDoc doc_of(const std::vector<PointRecord>& points) {
  ResultsDoc doc;
  for (const auto& p : points) doc.points.push_back({point_head_from_json(to_json(p)), p, {}});
  return doc;
}

std::string report_of(const ResultsDoc& doc) {
  return report_markdown({ReportInput{"r", doc}}, PlotOutcome{{}, "none"});
}

TEST(Labels, ReportTitleShowsEveryVaryingParam) {
  const std::string md =
      report_of(doc_of({decode_point("shm", {}, 3), decode_point("shm", {"rank=1:slowdown=1.3"}, 3),
                        decode_point("tcp", {}, 5)}));
  EXPECT_NE(md.find("### Point 0: tiny decode batch=4 context=128 tp=2 fp32 cpu topology=shm "
                    "inject=none\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Point 1: tiny decode batch=4 context=128 tp=2 fp32 cpu topology=shm "
                    "inject=rank=1:slowdown=1.3\n"),
            std::string::npos);
  // steps differ too, but how long a point ran is no axis.
  EXPECT_NE(md.find("### Point 2: tiny decode batch=4 context=128 tp=2 fp32 cpu topology=tcp "
                    "inject=none\n"),
            std::string::npos);
}

TEST(Labels, ReportTitleOfOnePointAddsNothing) {
  const std::string md = report_of(doc_of({decode_point("shm", {}, 3)}));
  EXPECT_NE(md.find("### Point 0: tiny decode batch=4 context=128 tp=2 fp32 cpu\n"),
            std::string::npos)
      << md;
}

TEST(Labels, ServeTitleShowsItsLoad) {
  PointRecord p = decode_point("shm", {}, 40);
  p.params.phase = "serve";
  ServeParamsRecord s;
  s.load = "rate";
  s.x = 2.5;
  p.params.serve = s;
  const std::string md = report_of(doc_of({p}));
  EXPECT_NE(md.find("### Point 0: tiny serve batch=4 rate=2.5 tp=2 fp32 cpu\n"), std::string::npos)
      << md;
}

// Two runs of the same two points, which differ only in steps: compare's headings say so.
TEST(Labels, CompareHeadingKeepsAnOmittedFieldThatVaries) {
  const ResultsDoc doc = doc_of({decode_point("shm", {}, 3), decode_point("shm", {}, 5)});
  const std::string text = format_compare(compare_runs({{"a", doc}, {"b", doc}}));
  EXPECT_NE(text.find(" steps=3 "), std::string::npos) << text;
  EXPECT_NE(text.find(" steps=5 "), std::string::npos) << text;
  EXPECT_EQ(text.find("model="), std::string::npos) << text;  // the same on every row
}

}  // namespace
}  // namespace tpb
