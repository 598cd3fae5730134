// The serve load curve: free region, Kneedle knee and memory wall.
#include <gtest/gtest.h>

#include <limits>

#include "harness/serve/curve.h"

namespace tpb {
namespace {

CurveInput point(double x, double tokens_per_s, double itl_ms, const char* status = "ok") {
  CurveInput p;
  p.x = x;
  p.total_tokens_per_s = tokens_per_s;
  p.itl_p95_s = itl_ms / 1e3;
  p.status = status;
  return p;
}

CurveInput slo_point(double x, double attainment, double goodput, const char* status = "ok") {
  CurveInput p = point(x, 100 * x, 10, status);
  p.slo_attainment = attainment;
  p.goodput_rps = goodput;
  p.gpus = 8;
  return p;
}

// Attainment 1.0, 0.95, 0.92, then 0.5 at 32 and 0.95 again at 64: the capacity is 16 (the last
// before the first miss; 64's recovery is past it), its goodput per GPU 12 / 8.
TEST(ServeCurve, SloCapacityIsTheLastLoadBeforeTheFirstMiss) {
  const auto c =
      make_curve("rate", {slo_point(64, 0.95, 40), slo_point(4, 1.0, 4), slo_point(8, 0.95, 7.6),
                          slo_point(16, 0.92, 12), slo_point(32, 0.5, 16)});
  ASSERT_TRUE(c.slo);
  EXPECT_EQ(c.slo->x.value_or(-1), 16);
  EXPECT_DOUBLE_EQ(c.slo->attainment, 0.92);
  EXPECT_DOUBLE_EQ(c.slo->goodput_per_gpu, 1.5);
  EXPECT_EQ(c.slo->next_x.value_or(-1), 32);
  EXPECT_DOUBLE_EQ(c.slo->next_attainment, 0.5);
  // Exactly at the target counts; an oom load is a miss; no SLO, no capacity.
  const auto edge = make_curve("rate", {slo_point(1, 0.9, 1), slo_point(2, 1.0, 2, "oom")});
  EXPECT_EQ(edge.slo->x.value_or(-1), 1);
  EXPECT_EQ(edge.slo->next_x.value_or(-1), 2);
  const auto none = make_curve("rate", {slo_point(1, 0.5, 0.5)});
  EXPECT_FALSE(none.slo->x);
  EXPECT_FALSE(make_curve("rate", {point(1, 10, 10)}).slo);
  const auto all = make_curve("rate", {slo_point(1, 1, 1), slo_point(2, 1, 2)});
  EXPECT_EQ(all.slo->x.value_or(-1), 2);
  EXPECT_FALSE(all.slo->next_x);
}

TEST(ServeCurve, KneedleFindsTheSaturationKnee) {
  // Throughput 100 x min(load, 16) over loads 1..64. Normalised: x_n = (x - 1) / 63,
  // y_n = (min(x, 16) - 1) / 15. Difference at 8: 7/15 - 7/63 = 0.356; at 16: 1 - 15/63 = 0.762;
  // at 32: 1 - 31/63 = 0.508. The knee is 16.
  std::vector<CurveInput> pts;
  for (const double x : {64.0, 1.0, 4.0, 16.0, 2.0, 32.0, 8.0})  // any order: sorted by load
    pts.push_back(point(x, 100 * std::min(x, 16.0), 10));
  const auto c = make_curve("concurrency", pts);
  ASSERT_TRUE(c.knee_x);
  EXPECT_EQ(*c.knee_x, 16);
  EXPECT_EQ(c.x, "concurrency");
  EXPECT_EQ(c.points.front().x, 1);
  EXPECT_FALSE(c.wall_x);
}

TEST(ServeCurve, SmoothConcaveCurve) {
  // y = x / (x + 4) at x = 1..10 (normalised x_n = (x - 1) / 9): the difference y_n - x_n is
  // largest at x = 4 (0.2500 there, 0.2222 at 3, 0.2469 at 5).
  std::vector<CurveInput> pts;
  for (int x = 1; x <= 10; ++x) pts.push_back(point(x, x / (x + 4.0), 10));
  EXPECT_EQ(make_curve("rate", pts).knee_x.value_or(-1), 4);
}

TEST(ServeCurve, NoKneeWithFewerThanThreeOkPoints) {
  const auto c = make_curve("concurrency", {point(1, 100, 10), point(2, 190, 10),
                                            point(4, 0, 0, "oom"), point(8, 0, 0, "oom")});
  EXPECT_FALSE(c.knee_x);
  // A straight line has no positive difference either.
  EXPECT_FALSE(make_curve("rate", {point(1, 1, 1), point(2, 2, 1), point(3, 3, 1)}).knee_x);
}

TEST(ServeCurve, FreeRegionEndsAtTheFirstLoadBeyondTenPercent) {
  // Lightest load's p95 ITL 10 ms: 10.5 and exactly 11.0 are within 10%, 11.5 is not, and the
  // region stays ended even though load 16 is back at 10 ms.
  const auto c = make_curve("concurrency", {point(1, 1, 10), point(2, 2, 10.5), point(4, 3, 11.0),
                                            point(8, 4, 11.5), point(16, 5, 10)});
  ASSERT_TRUE(c.free_upto);
  EXPECT_EQ(*c.free_upto, 4);
  EXPECT_DOUBLE_EQ(c.free_threshold, 0.10);
  EXPECT_EQ(make_curve("c", {point(1, 1, 10), point(2, 2, 10.5)}, 0.01).free_upto.value_or(-1), 1);
}

TEST(ServeCurve, ALoadWithoutAnItlIsNotFree) {
  // No p95 ITL (one-token outputs, or nothing completed): NaN passed every comparison, so the
  // lightest load's NaN made the region run to the heaviest load.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(make_curve("concurrency", {point(1, nan, nan), point(8, nan, nan)}).free_upto);
  const auto c = make_curve("concurrency", {point(1, 1, 10), point(2, 2, nan), point(4, 3, 10)});
  EXPECT_EQ(c.free_upto.value_or(-1), 1);
  // Nor does a load without a throughput enter the knee's normalisation.
  EXPECT_FALSE(make_curve("c", {point(1, 1, 1), point(2, nan, 1), point(4, 2, 1)}).knee_x);
}

TEST(ServeCurve, MemoryWallAtTheFirstFullOrOomPoint) {
  auto full = point(8, 5, 30);
  full.kv_full_with_queue = true;
  full.kv_reason = "kv 4096/4096 tokens with 12 waiting";
  auto c =
      make_curve("concurrency", {point(1, 1, 10), point(16, 0, 0, "oom"), full, point(4, 3, 12)});
  ASSERT_TRUE(c.wall_x);
  EXPECT_EQ(*c.wall_x, 8);
  EXPECT_EQ(c.wall_reason, full.kv_reason);
  c = make_curve("concurrency", {point(1, 1, 10), point(16, 0, 0, "oom"), point(4, 3, 12)});
  EXPECT_EQ(c.wall_x.value_or(-1), 16);
  EXPECT_NE(c.wall_reason.find("oom"), std::string::npos);
  EXPECT_FALSE(make_curve("rate", {point(1, 1, 10)}).wall_x);
}

}  // namespace
}  // namespace tpb
