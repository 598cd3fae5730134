// compare's diff on hand-built points (times in ms per step over 10 steps, two ranks each).
#include <gtest/gtest.h>

#include "harness/report/compare/compare_diff.h"

namespace tpb {
namespace {

constexpr double kMs = 1e-3, kSteps = 10;

// Both ranks: `compute` ms of qkv_proj (memory-bound) and `attn` ms of attention per step,
// the all-reduce's transfer and wait, and `outside` ms with nothing in flight.
PointRecord point(double compute, double transfer, double wait, double outside,
                  const char* phase = "decode", double attn = 1) {
  PointRecord p;
  p.status = PointStatus::ok;
  p.params.phase = phase;
  p.params.steps = static_cast<int64_t>(kSteps);
  p.metrics.emplace();
  p.metrics->ridge = 100;
  p.metrics->step_time_s.mean = (compute + attn + transfer + wait + outside) * kMs;
  p.ops = std::vector<OpRecord>{{"qkv_proj", compute * kMs, 0, 1e6, 2e6, {}, {}},
                                {"attention", attn * kMs, 0, 1e6, 1e6, {}, {}}};
  p.ranks.emplace();
  for (int r = 0; r < 2; ++r) {
    RankRecord x;
    x.rank = r;
    x.wall_s = (compute + attn + transfer + wait + outside) * kMs * kSteps;
    x.compute_s = (compute + attn) * kMs * kSteps;
    x.transfer_s = transfer * kMs * kSteps;
    x.wait_s = wait * kMs * kSteps;
    x.host_gap_fraction = outside * kMs * kSteps / x.wall_s;
    p.ranks->push_back(x);
  }
  return p;
}

TEST(CompareDiff, AnotherFabricIsTransfer) {
  const auto d = compare_diff(point(5, 1, 0, 0.5), "A", point(5, 4, 0, 0.5), "B");
  ASSERT_TRUE(d);
  EXPECT_NEAR(d->step_s, 3 * kMs, 1e-12);
  EXPECT_NEAR(d->transfer_s, 3 * kMs, 1e-12);
  EXPECT_NEAR(d->compute_s, 0, 1e-12);
  EXPECT_EQ(d->slower, "B");
  EXPECT_EQ(d->kind, "transfer");
}

TEST(CompareDiff, TheFasterSecondRunNamesTheFirstAsSlower) {
  // B's qkv_proj takes 2 ms less: A is the slower, by one op (qkv_proj carries all the extra
  // time and is 1 / 6 of B's op time).
  const auto d =
      compare_diff(point(3, 1, 0, 0.5, "decode", 5), "A", point(1, 1, 0, 0.5, "decode", 5), "B");
  ASSERT_TRUE(d);
  EXPECT_NEAR(d->compute_s, -2 * kMs, 1e-12);
  EXPECT_EQ(d->slower, "A");
  EXPECT_EQ(d->kind, "one_op");
}

TEST(CompareDiff, MoreWaitIsImbalance) {
  const auto d = compare_diff(point(5, 1, 0.2, 0.5), "A", point(5, 1, 3, 0.5), "B");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->kind, "wait");
}

// More wait, and the slower point's own analysis found why its late rank is late: the diff
// names that rank and its cause; where the cause is noise, it names none.
TEST(CompareDiff, MoreWaitNamesTheSlowerPointsLateRank) {
  PointRecord slow = point(5, 1, 3, 0.5);
  slow.straggler.emplace();
  slow.straggler->cause = StragglerCauseRecord{};
  slow.straggler->cause->rank = 3;
  slow.straggler->cause->kind = "one_op";
  slow.straggler->cause->text = "its extra time is in one op: attention carries 100% of it";
  const auto d = compare_diff(point(5, 1, 0.2, 0.5), "A", slow, "B");
  ASSERT_TRUE(d && d->late_rank && d->late_kind);
  EXPECT_EQ(d->kind, "wait");
  EXPECT_EQ(*d->late_rank, 3);
  EXPECT_EQ(*d->late_kind, "one_op");
  EXPECT_NE(d->text.find("the late one is rank 3: its extra time is in one op: attention"),
            std::string::npos)
      << d->text;
  slow.straggler->cause->kind = "no_excess";
  const auto n = compare_diff(point(5, 1, 0.2, 0.5), "A", slow, "B");
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->late_rank);
  EXPECT_NE(n->text.find("diagnose names the late one"), std::string::npos) << n->text;
}

TEST(CompareDiff, ServePointsAreNotDiffed) {
  EXPECT_FALSE(compare_diff(point(5, 1, 0, 0), "A", point(6, 1, 0, 0, "serve"), "B"));
}

}  // namespace
}  // namespace tpb
