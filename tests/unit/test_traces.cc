// The traces' printers on hand-made timelines: report --trace merged keeps every input event
// once, gives each (point, rank) its own process and moves each point onto its run's clock;
// a serve trace that would hold no step says why.
#include <gtest/gtest.h>

#include <set>

#include "harness/report/serve/serve_trace.h"
#include "harness/report/trace/merged_trace.h"
#include "harness/report/trace_writer.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

// Two ranks of one TP group, `steps` steps from `t0`, each a step bar, one compute op and one
// all-reduce (rank 1 enters it 1 ms late).
std::vector<RankTrace> two_ranks(double t0, int steps) {
  std::vector<RankTrace> v(2);
  for (int r = 0; r < 2; ++r) {
    v[r].rank = v[r].group_rank = r;
    for (int s = 0; s < steps; ++s) {
      const double b = t0 + 0.01 * s;
      v[r].segs.push_back({b, b + 0.01, s, 0, Op::step, 0});
      v[r].segs.push_back({b, b + 0.004 + 0.001 * r, s, 0, Op::qkv_proj, 0});
      v[r].segs.push_back({b + 0.004 + 0.001 * r, b + 0.006, s, 0, Op::allreduce_attn, 1});
    }
  }
  return v;
}

oj trace_of(double t0, int steps) {
  TraceOptions o;
  o.meta = {{"params", {{"batch", steps}}}};
  return chrome_trace(two_ranks(t0, steps), o);
}

// Point 0 at t = 100 s, point 2 (point 1 has no trace) at 100.5 s, both of one run; 2 ranks.
TEST(MergedTrace, OneProcessPerPointAndRankEveryEventOnce) {
  const std::vector<PointTrace> in = {{0, 0, "traces/point-0.json", trace_of(100, 2)},
                                      {0, 2, "traces/point-2.json", trace_of(100.5, 3)}};
  const oj m = merged_trace(in, {3});
  std::size_t events = 0;
  for (const auto& t : in) events += t.trace["traceEvents"].size();
  EXPECT_EQ(m["traceEvents"].size(), events);
  std::set<int64_t> pids;
  std::set<std::string> names;
  for (const auto& e : m["traceEvents"]) {
    pids.insert(e["pid"].get<int64_t>());
    if (e["name"] == "process_name") names.insert(e["args"]["name"].get<std::string>());
  }
  // pid = point * 2 + rank: 0, 1 for point 0 and 4, 5 for point 2.
  EXPECT_EQ(pids, (std::set<int64_t>{0, 1, 4, 5}));
  EXPECT_TRUE(names.count("point 2 rank 1 (TP group 0, rank 1)")) << m["traceEvents"].dump();
  // Point 2's first step starts 0.5 s after point 0's: 500000 us on the merged clock.
  double first2 = 1e300;
  for (const auto& e : m["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == 4) first2 = std::min(first2, e["ts"].get<double>());
  EXPECT_NEAR(first2, 500000, 1e-3);
  EXPECT_EQ(m["metadata"]["ranks_per_point"], 2);
  EXPECT_EQ(m["metadata"]["points"][1]["pid_base"], 4);
}

// Over two documents the second's points come after all of the first's (3 points, so its
// point 0 is pid 6, 7), each document on its own clock from 0, and names say which document.
TEST(MergedTrace, SeveralDocumentsNumberOnAndStartAtZero) {
  const std::vector<PointTrace> in = {{0, 0, "a/trace.json", trace_of(100, 1)},
                                      {1, 0, "b/trace.json", trace_of(7, 1)}};
  const oj m = merged_trace(in, {3, 1});
  std::set<int64_t> pids;
  bool named = false;
  double first_b = 1e300;
  for (const auto& e : m["traceEvents"]) {
    pids.insert(e["pid"].get<int64_t>());
    named = named || (e["name"] == "process_name" &&
                      e["args"]["name"] == "results 1 point 0 rank 0 (TP group 0, rank 0)");
    if (e["ph"] == "X" && e["pid"].get<int64_t>() >= 6)
      first_b = std::min(first_b, e["ts"].get<double>());
  }
  EXPECT_EQ(pids, (std::set<int64_t>{0, 1, 6, 7}));
  EXPECT_TRUE(named);
  EXPECT_NEAR(first_b, 0, 1e-9);
}

TEST(ServeTraceEmpty, SaysWhy) {
  const auto ranks = two_ranks(0, 3);
  EXPECT_EQ(empty_serve_trace_reason(ranks, 20, 3, {}), "");
  EXPECT_NE(empty_serve_trace_reason({}, 20, 0, {}).find("no step ran"), std::string::npos);
  // A sampled timeline that kept steps 40 and 90 of 100: none of the first 20.
  std::vector<RankTrace> late(1);
  late[0].segs.push_back({1, 2, 40, 0, Op::step, 0});
  late[0].segs.push_back({3, 4, 90, 0, Op::step, 0});
  const std::string why = empty_serve_trace_reason(late, 20, 100, {40, 90});
  EXPECT_NE(why.find("first of them step 40"), std::string::npos) << why;
  EXPECT_NE(why.find("--trace-steps 41"), std::string::npos) << why;
}

}  // namespace
}  // namespace tpb
