// The collectives records against a file the pre-record binary wrote
// (tests/golden/results_collectives.json): every point and the summary read into their records
// and written back must print byte for byte as read, so the records change nothing in the schema.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "base/errors.h"
#include "harness/record/coll_point_builder.h"
#include "harness/record/json/results_json.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

oj golden_collectives() {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/results_collectives.json");
  EXPECT_TRUE(f.good());
  std::stringstream s;
  s << f.rdbuf();
  return oj::parse(s.str());
}

TEST(CollRoundTrip, EveryPoint) {
  const oj doc = golden_collectives();
  ASSERT_GE(doc["points"].size(), 2u);
  for (std::size_t i = 0; i < doc["points"].size(); ++i) {
    const oj& in = doc["points"][i];
    EXPECT_EQ(to_json(coll_point_from_json(in)).dump(), in.dump()) << "point " << i;
  }
}

TEST(CollRoundTrip, Summary) {
  const oj doc = golden_collectives();
  const oj& in = doc[coll_summary_section()];
  EXPECT_EQ(to_json(coll_summary_from_json(in)).dump(), in.dump());
}

// The golden run had no --baseline; the block goes last in metrics, as the writer puts it.
TEST(CollRoundTrip, BaselineBlock) {
  oj in = golden_collectives()["points"][0];
  in["metrics"]["baseline"] = {{"time_s", 2.5e-06}, {"ratio", 0.8}, {"what", "plain loop"}};
  const CollPointRecord p = coll_point_from_json(in);
  ASSERT_TRUE(p.metrics.baseline);
  EXPECT_EQ(p.metrics.baseline->ratio, 0.8);
  EXPECT_EQ(to_json(p).dump(), in.dump());
}

// params.mpi_mode (1.2.0) goes last in params; the golden file predates it, so it is absent.
TEST(CollRoundTrip, MpiModeParam) {
  oj in = golden_collectives()["points"][0];
  ASSERT_FALSE(in["params"].contains("mpi_mode"));
  EXPECT_FALSE(coll_point_from_json(in).params.mpi_mode);
  in["params"]["mpi_mode"] = "nonblocking";
  const CollPointRecord p = coll_point_from_json(in);
  EXPECT_EQ(p.params.mpi_mode.value_or(""), "nonblocking");
  EXPECT_EQ(to_json(p).dump(), in.dump());
}

TEST(CollRoundTrip, RecordMembersReachTheJson) {
  const oj in = golden_collectives()["points"][1];
  CollPointRecord p = coll_point_from_json(in);
  EXPECT_EQ(p.params.bytes, in["params"]["bytes"].get<int64_t>());
  EXPECT_EQ(p.metrics.busbw_GBps, in["metrics"]["busbw_GBps"].get<double>());
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[1].arrival_lag_s.mean, in["ranks"][1]["arrival_lag_s"]["mean"].get<double>());
  // A changed member changes the output: the comparisons above can fail.
  p.metrics.wrong += 1;
  EXPECT_NE(to_json(p).dump(), in.dump());
  p = coll_point_from_json(in);
  p.ranks[0].host += "x";
  EXPECT_NE(to_json(p).dump(), in.dump());
  p = coll_point_from_json(in);
  p.metrics.baseline = CollBaselineRecord{};  // absent stays absent; present is written
  EXPECT_TRUE(to_json(p)["metrics"].contains("baseline"));
}

TEST(CollRoundTrip, MissingRequiredFieldIsBadInput) {
  oj in = golden_collectives()["points"][0];
  in["params"].erase("bytes");
  EXPECT_THROW(coll_point_from_json(in), BadInput);
  in = golden_collectives()["points"][0];
  in["ranks"][0].erase("arrival_lag_s");
  EXPECT_THROW(coll_point_from_json(in), BadInput);
  EXPECT_THROW(coll_summary_from_json(oj{{"sizes", 1}}), BadInput);
}

// The summary over points, pinned by hand: wrong values add up, busbw averages over sizes.
TEST(CollRoundTrip, SummaryOfRecords) {
  std::vector<CollPointRecord> points(2);
  points[0].metrics.busbw_GBps = 1.0;
  points[1].metrics.busbw_GBps = 3.0;
  points[1].metrics.wrong = 4;
  const CollSummaryRecord s = coll_summary(points);
  EXPECT_EQ(s.sizes, 2);
  EXPECT_EQ(s.wrong_total, 4);
  EXPECT_DOUBLE_EQ(s.avg_busbw_GBps, 2.0);
  EXPECT_EQ(coll_summary({}).avg_busbw_GBps, 0.0);
}

// Two ranks, two iterations, on the synced clock (seconds):
//   rank 0 enters at 0 and 10, exits at 1 and 11; rank 1 enters at 0.5 and 10.2, exits at
//   1.2 and 11.1. Spans (last exit - first enter): 1.2 and 1.1. Rank 1's arrival lag: 0.5 and
//   0.2, mean 0.35. The ranks' own loop times are 2 and 4: time_s.mean is their mean, 3, by
//   nccl-tests' default -a 1; algbw = 1000 B / 3 s / 1e9; an all-reduce over 2 ranks has bus
//   factor 2(n-1)/n = 1. -a 0|2|3 give rank 0's 2, the min 2 and the max 4.
TEST(CollPointBuilder, PinnedToHandNumbers) {
  auto seg = [](double t0, double t1, int step) {
    SegmentRecord r;
    r.t0 = t0, r.t1 = t1, r.step = step, r.op = Op::allreduce_attn, r.collective = 1;
    return r;
  };
  std::vector<CollRankResult> ranks(2);
  ranks[0].iters = {seg(0, 1, 0), seg(10, 11, 1)};
  ranks[0].loop_s = 2;
  ranks[1].iters = {seg(0.5, 1.2, 0), seg(10.2, 11.1, 1)};
  ranks[1].loop_s = 4;
  ranks[1].wrong = 3;
  CollectivesSpec s;
  s.iters = 2;
  s.warmup = 1;
  const CollPointRecord p = coll_point(s, CollCounts{250, 250, 1000}, ranks, {"a", "b"});
  EXPECT_EQ(p.params.kind, "all_reduce");
  EXPECT_EQ(p.params.bytes, 1000);
  EXPECT_EQ(p.params.ranks, 2);
  EXPECT_DOUBLE_EQ(p.metrics.time_s.mean, 3.0);
  ASSERT_TRUE(p.metrics.time_s.over_ranks);
  EXPECT_DOUBLE_EQ(p.metrics.time_s.over_ranks->rank0, 2.0);
  EXPECT_DOUBLE_EQ(p.metrics.time_s.over_ranks->avg, 3.0);
  EXPECT_DOUBLE_EQ(p.metrics.time_s.over_ranks->min, 2.0);
  EXPECT_DOUBLE_EQ(p.metrics.time_s.over_ranks->max, 4.0);
  EXPECT_EQ(p.params.average, 1);
  const double by_a[4] = {2.0, 3.0, 2.0, 4.0};
  for (int a = 0; a < 4; ++a) {
    CollectivesSpec sa = s;
    sa.average = a;
    EXPECT_DOUBLE_EQ(
        coll_point(sa, CollCounts{250, 250, 1000}, ranks, {"a", "b"}).metrics.time_s.mean, by_a[a])
        << "-a " << a;
  }
  EXPECT_DOUBLE_EQ(p.metrics.time_s.max, 1.2);
  EXPECT_DOUBLE_EQ(p.metrics.time_s.min, 1.1);
  EXPECT_DOUBLE_EQ(p.metrics.algbw_GBps, 1000 / 3.0 / 1e9);
  EXPECT_DOUBLE_EQ(p.metrics.busbw_factor, 1.0);
  EXPECT_DOUBLE_EQ(p.metrics.busbw_GBps, 1000 / 3.0 / 1e9);
  EXPECT_EQ(p.metrics.wrong, 3);
  EXPECT_FALSE(p.metrics.baseline);
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[1].host, "b");
  EXPECT_DOUBLE_EQ(p.ranks[0].arrival_lag_s.max, 0.0);
  EXPECT_NEAR(p.ranks[1].arrival_lag_s.mean, 0.35, 1e-12);  // 10.2 - 10 is not exact
  EXPECT_EQ(p.ranks[1].arrived_last, 2);
  EXPECT_EQ(p.straggler.rank, 1);
  EXPECT_EQ(p.samples.iter_time_s.size(), 2u);
  // What the builder makes, the reader reads back whole.
  EXPECT_EQ(to_json(coll_point_from_json(to_json(p))).dump(), to_json(p).dump());
}

}  // namespace
}  // namespace tpb
