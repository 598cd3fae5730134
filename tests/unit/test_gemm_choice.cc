// One GEMM kernel per shape for the whole TP group (issue 54, defect 5): the pure rule every
// rank applies to the times gathered over the group (layers/cuda/plan/gemm_choice.h), and the
// row counts a serving run tunes before its steps.
#include <gtest/gtest.h>

#include <vector>

#include "layers/cuda/plan/gemm_choice.h"

namespace tpb {
namespace {

// The H200's near-tie (measured/h200-2026-12-04-device-check: 45.728 vs 45.888 us for bf16
// m=1 n=4096 k=14336): timed apart on two ranks, the noise decides each rank's winner.
const std::vector<double> kRank0{45.89e-6, 45.73e-6};
const std::vector<double> kRank1{45.75e-6, 45.95e-6};

TEST(GemmChoice, ANearTieTimedOnEachRankAlonePicksDifferentKernels) {
  // What each rank did before issue 54: its own fastest.
  EXPECT_EQ(fastest_candidate(kRank0), 1);
  EXPECT_EQ(fastest_candidate(kRank1), 0);
}

TEST(GemmChoice, TheGroupPicksOneKernelForEveryRank) {
  // Group times are the slowest rank's: {45.89, 45.95} us, so candidate 0, on either rank's
  // view of the gathered times (both hold them in rank order).
  EXPECT_EQ(agreed_candidate({kRank0, kRank1}), 0);
  EXPECT_DOUBLE_EQ(group_time({kRank0, kRank1}, 0), 45.89e-6);
  EXPECT_DOUBLE_EQ(group_time({kRank0, kRank1}, 1), 45.95e-6);
  // The rule reads values, not the rank order: the same winner whichever rank lists first.
  EXPECT_EQ(agreed_candidate({kRank1, kRank0}), 0);
}

TEST(GemmChoice, ACandidateThatFailedOnAnyRankIsOut) {
  // Candidate 0 is the fastest on rank 1 but failed (-1) on rank 0; 2 beats 1 (60 vs 70 us).
  EXPECT_EQ(agreed_candidate({{-1, 50e-6, 60e-6}, {40e-6, 70e-6, 55e-6}}), 2);
  EXPECT_LT(group_time({{-1, 50e-6}, {40e-6, 70e-6}}, 0), 0);
  EXPECT_EQ(agreed_candidate({{-1, 50e-6}, {40e-6, -1}}), -1);  // none ran everywhere
  EXPECT_EQ(agreed_candidate({{1e-6, 2e-6}, {1e-6}}), 0);       // a short list: missing = failed
}

TEST(GemmChoice, TiesGoToTheHeuristicsEarlierPick) {
  EXPECT_EQ(fastest_candidate({3e-6, 2e-6, 2e-6}), 1);
  EXPECT_EQ(agreed_candidate({{3e-6, 2e-6, 2e-6}, {1e-6, 2e-6, 2e-6}}), 1);
  EXPECT_EQ(fastest_candidate({}), -1);
}

TEST(GemmChoice, ServingTunesEveryPowerOfTwoBelowItsLargestStepAndThatStep) {
  EXPECT_EQ(tuning_rows(57), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 57}));
  EXPECT_EQ(tuning_rows(64), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(tuning_rows(1), (std::vector<int64_t>{1}));
  EXPECT_TRUE(tuning_rows(0).empty());
}

TEST(GemmChoice, AStepTakesTheKernelOfTheNextTunedRowCount) {
  const std::vector<int64_t> tuned = tuning_rows(57);
  EXPECT_EQ(tuned_rows_for(5, tuned), 8);
  EXPECT_EQ(tuned_rows_for(8, tuned), 8);
  EXPECT_EQ(tuned_rows_for(33, tuned), 57);
  EXPECT_EQ(tuned_rows_for(100, tuned), 57);  // past the largest: the largest
  EXPECT_EQ(tuned_rows_for(3, {}), -1);
}

}  // namespace
}  // namespace tpb
