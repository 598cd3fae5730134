// One GEMM kernel per shape for a whole TP group: each rank times the same candidates, the
// times are gathered over the group, and every rank applies the same pure rule to the same
// numbers, so every rank runs the same kernel (a near-tie timed apart on each rank would
// otherwise give each rank its own winner: a steady imbalance nobody injected).
#pragma once
#include <cstdint>
#include <vector>

namespace tpb {

// The fastest of one rank's own candidate times (seconds; <= 0: the candidate failed to run),
// the lowest index on a tie; -1 when none ran. What each rank chose alone before issue 54.
int fastest_candidate(const std::vector<double>& times);

// The group's choice from every rank's times for the same candidates ([rank][candidate]): a
// candidate's group time is its slowest rank's (the step waits for the last rank at the next
// all-reduce), a candidate that failed on any rank is out, then the fastest group time wins,
// the lowest index on a tie. -1 when no candidate ran everywhere. The same on every rank.
int agreed_candidate(const std::vector<std::vector<double>>& per_rank);

// The group time of candidate i (max over ranks; <= 0 when it failed on any rank).
double group_time(const std::vector<std::vector<double>>& per_rank, int i);

// The row counts to tune before a serving run's steps, whose row count changes every step:
// the powers of two below max_rows, and max_rows itself. A step of m rows runs the kernel
// tuned at the smallest of these >= m (tuned_rows_for), so no step times kernels.
std::vector<int64_t> tuning_rows(int64_t max_rows);

// Of the row counts tuned (any order), the smallest >= m, else the largest; -1 when none.
int64_t tuned_rows_for(int64_t m, const std::vector<int64_t>& tuned);

}  // namespace tpb
