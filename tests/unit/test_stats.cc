// Order statistics pinned to numpy's answers (numpy.percentile default "linear" method), so
// that summaries in results.json can be recomputed from the raw samples with numpy.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/analysis/stats.h"

namespace tpb {
namespace {

TEST(Percentile, MatchesNumpyLinear) {
  // numpy.percentile([4, 1, 3, 2], p): h = (n-1) * p/100 = 3p/100 over sorted [1, 2, 3, 4].
  const std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);   // h = 1.5 -> 2 + 0.5 * 1
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);   // h = 2.7 -> 3 + 0.7 * 1
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);  // h = 2.97
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4.0);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 1.75);  // h = 0.75
}

TEST(Percentile, EdgeCases) {
  EXPECT_TRUE(std::isnan(percentile({}, 50)));  // no samples: null, not a plausible 0
  EXPECT_EQ(percentile({7}, 0), 7.0);
  EXPECT_EQ(percentile({7}, 99), 7.0);
  EXPECT_EQ(percentile({1, 2}, 150), 2.0);  // clamped to 100
  EXPECT_EQ(percentile({1, 2}, -5), 1.0);   // clamped to 0
}

TEST(LowerMedian, PicksElementNMinus1Over2) {
  EXPECT_TRUE(std::isnan(lower_median({})));
  EXPECT_EQ(lower_median({5}), 5.0);
  EXPECT_EQ(lower_median({13, 10}), 10.0);     // two ranks: the faster one, not 11.5
  EXPECT_EQ(lower_median({4, 1, 3, 2}), 2.0);  // index (4-1)/2 = 1 of [1,2,3,4]
  EXPECT_EQ(lower_median({5, 1, 3}), 3.0);     // odd n: the true median
}

TEST(Summarize, OneToTen) {
  // numpy on [1..10]: h = 9p/100. p50 h=4.5 -> 5.5; p90 h=8.1 -> 9.1; p95 h=8.55 -> 9.55;
  // p99 h=8.91 -> 9.91. Mean 5.5.
  std::vector<double> v;
  for (int i = 10; i >= 1; --i) v.push_back(i);
  const Summary s = summarize(v);
  EXPECT_EQ(s.n, 10u);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.p95, 9.55);
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_EQ(s.min, 1.0);
  EXPECT_EQ(s.max, 10.0);
}

TEST(Summarize, EmptyIsZeros) {
  const Summary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_TRUE(std::isnan(s.p50));
  EXPECT_TRUE(std::isnan(s.p99));
  EXPECT_TRUE(std::isnan(s.mean));
  EXPECT_TRUE(std::isnan(s.min));
  EXPECT_TRUE(std::isnan(s.max));
}

TEST(MinMeanMax, Basic) {
  const MinMeanMax m = min_mean_max({3, 1, 2, 6});
  EXPECT_EQ(m.min, 1.0);
  EXPECT_EQ(m.mean, 3.0);
  EXPECT_EQ(m.max, 6.0);
  const MinMeanMax e = min_mean_max({});
  EXPECT_TRUE(std::isnan(e.min));
  EXPECT_TRUE(std::isnan(e.mean));
  EXPECT_TRUE(std::isnan(e.max));
}

}  // namespace
}  // namespace tpb
