// The all-reduce curve's two-parameter summary (harness/measure/calibrate.h) on synthetic curves.
#include <gtest/gtest.h>

#include <stdexcept>

#include "harness/measure/calibrate.h"

namespace tpb {
namespace {

TEST(AlphaBeta, RecoversLatencyAndBandwidthOfALinearCurve) {
  std::vector<int64_t> bytes;
  std::vector<double> secs;
  for (int64_t s = 8; s <= (64 << 20); s *= 4) {
    bytes.push_back(s);
    secs.push_back(5e-6 + static_cast<double>(s) / 20e9);  // 5 us + S / (20 GB/s)
  }
  const AlphaBeta ab = fit_alpha_beta(bytes, secs);
  EXPECT_NEAR(ab.alpha_s, 5e-6 + 32 / 20e9, 1e-12);  // the median of the 3 smallest: 32 B
  EXPECT_NEAR(ab.algbw, 20e9, 20e9 * 1e-6);
}

TEST(AlphaBeta, MedianOfTheSmallestResistsOneOutlier) {
  const AlphaBeta ab = fit_alpha_beta({8, 32, 128, 1 << 20}, {4e-6, 90e-6, 5e-6, 1e-3});
  EXPECT_DOUBLE_EQ(ab.alpha_s, 5e-6);
  EXPECT_NEAR(ab.algbw, (1 << 20) / (1e-3 - 5e-6), 1.0);
}

TEST(AlphaBeta, LargestNoSlowerThanLatencyUsesItsOwnTime) {
  const AlphaBeta ab = fit_alpha_beta({8, 32, 128}, {5e-6, 5e-6, 4e-6});
  EXPECT_DOUBLE_EQ(ab.alpha_s, 5e-6);
  EXPECT_DOUBLE_EQ(ab.algbw, 128 / 4e-6);
}

TEST(AlphaBeta, NeedsThreePoints) {
  EXPECT_THROW(fit_alpha_beta({8, 32}, {1e-6, 2e-6}), std::invalid_argument);
  EXPECT_THROW(fit_alpha_beta({8, 32, 128}, {1e-6, 2e-6}), std::invalid_argument);
}

}  // namespace
}  // namespace tpb
