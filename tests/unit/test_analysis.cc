// Analysis on hand-built timelines whose answers are worked out by hand in the comments
// (times in ms; each step is a 10 ms Op::step record unless stated).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "harness/analysis/analysis.h"
#include "tests/support/segment_ms.h"

namespace tpb {
namespace {

using test::add;
using test::kMs;
constexpr double kTol = 1e-12;

RankTrace make_rank(int rank, int group, int group_rank) {
  RankTrace t;
  t.rank = rank, t.group = group, t.group_rank = group_rank;
  return t;
}

// One step of a rank: compute [s, s+compute], all-reduce [s+compute, s+exit], step [s, s+10].
// Extra compute for the slow rank is an Op::injected segment, as --inject slowdown records it.
void step_with_allreduce(RankTrace& t, int step, double s, double compute, double exit,
                         double injected = 0) {
  add(t, step, Op::step, s, s + 10);
  add(t, step, Op::qkv_proj, s, s + compute);
  if (injected > 0) add(t, step, Op::injected, s + compute, s + compute + injected);
  add(t, step, Op::allreduce_attn, s + compute + injected, s + exit);
}

// Two ranks, 4 steps at 10 ms. Rank 0 computes 5 ms and enters at 5; rank 1 computes 5 + 2
// injected and enters at 7; both exit at 8.
AnalysisInput two_rank_late(bool with_warmup) {
  AnalysisInput in;
  RankTrace r0 = make_rank(0, 0, 0), r1 = make_rank(1, 0, 1);
  if (with_warmup) {
    // Wild warm-up before t = 0: rank 0 enters 70 ms after rank 1. All must be ignored.
    for (int k = -2; k < 0; ++k) {
      const double s = -200 + 100 * (k + 2);
      step_with_allreduce(r0, k, s, 80, 90);
      step_with_allreduce(r1, k, s, 10, 90);
    }
  }
  for (int k = 0; k < 4; ++k) {
    step_with_allreduce(r0, k, 10.0 * k, 5, 8);
    step_with_allreduce(r1, k, 10.0 * k, 5, 8, 2);
  }
  in.ranks = {r0, r1};
  in.tokens_per_step = 8;
  in.occupancy_window_s = 10 * kMs;
  return in;
}

void expect_two_rank_late(const PointAnalysis& pa) {
  ASSERT_EQ(pa.ranks.size(), 2u);
  const RankMetrics &a = pa.ranks[0], &b = pa.ranks[1];
  // Per instance: latest_enter = 7, skew = 7 - 5 = 2.
  // wait(0) = min(7, 8) - 5 = 2; transfer(0) = 8 - max(5, 7) = 1.
  // wait(1) = min(7, 8) - 7 = 0; transfer(1) = 8 - max(7, 7) = 1.  Times 4 steps.
  EXPECT_EQ(pa.collectives.count, 4);
  EXPECT_NEAR(a.wait_s, 8 * kMs, kTol);
  EXPECT_NEAR(a.transfer_s, 4 * kMs, kTol);
  EXPECT_NEAR(b.wait_s, 0, kTol);
  EXPECT_NEAR(b.transfer_s, 4 * kMs, kTol);
  EXPECT_NEAR(a.collective_s, 12 * kMs, kTol);  // 3 ms per all-reduce
  EXPECT_NEAR(b.collective_s, 4 * kMs, kTol);
  EXPECT_NEAR(pa.collectives.skew.p50, 2 * kMs, kTol);
  EXPECT_NEAR(pa.collectives.skew.max, 2 * kMs, kTol);
  EXPECT_EQ(pa.collectives.skew_s.size(), 4u);
  EXPECT_NEAR(pa.collectives.wait_s_total, 8 * kMs, kTol);
  EXPECT_NEAR(pa.collectives.transfer_s_total, 8 * kMs, kTol);
  // wait_fraction = 8 / (40 + 40).
  EXPECT_NEAR(pa.collectives.wait_fraction, 0.1, kTol);
  EXPECT_EQ(a.arrived_last, 0);
  EXPECT_EQ(b.arrived_last, 4);
  EXPECT_EQ(a.collectives, 4);
  // compute: 4 x 5 = 20 and 4 x 7 = 28; wall 40 each.
  EXPECT_NEAR(a.wall_s, 40 * kMs, kTol);
  EXPECT_NEAR(a.compute_s, 20 * kMs, kTol);
  EXPECT_NEAR(b.compute_s, 28 * kMs, kTol);
  EXPECT_NEAR(a.useful_fraction, 0.5, kTol);
  EXPECT_NEAR(b.useful_fraction, 0.7, kTol);
  // Both ranks are busy [0, 8] of every 10 ms (waiting counts as busy): 0.8; host gap 0.2.
  EXPECT_NEAR(a.busy_fraction, 0.8, kTol);
  EXPECT_NEAR(b.busy_fraction, 0.8, kTol);
  EXPECT_NEAR(pa.host_gap_fraction, 0.2, kTol);
  EXPECT_NEAR(pa.useful_fraction, 0.6, kTol);
  // Straggler rank 1: arrived last 4 of 4; excess = 28 / lower_median{20, 28} - 1 = 0.4.
  EXPECT_EQ(pa.straggler.rank, 1);
  EXPECT_NEAR(pa.straggler.arrived_last_share, 1.0, kTol);
  EXPECT_NEAR(pa.straggler.excess_compute_fraction, 0.4, kTol);
  // Steps are all 10 ms; 1 group x 8 tokens / 10 ms = 800 tokens/s.
  ASSERT_EQ(pa.step_time_s.size(), 4u);
  EXPECT_NEAR(pa.step_time.p50, 10 * kMs, kTol);
  EXPECT_NEAR(pa.tokens_per_s, 800, 1e-9);
  EXPECT_EQ(pa.clock_condition_violations, 0);
}

TEST(Analysis, TwoRanksLateEnterGivesWaitSkewAndStraggler) {
  expect_two_rank_late(analyze(two_rank_late(false)));
}

TEST(Analysis, WarmupStepsAreExcluded) {
  expect_two_rank_late(analyze(two_rank_late(true)));
}

TEST(Analysis, StragglerExcessUsesLowerMedian) {
  // Rank 1 computes 1.3x (13 vs 10 ms per step) and enters last. lower_median{10, 13} = 10
  // gives 13/10 - 1 = 0.3; the mean-of-middle median (11.5) would understate it as 0.13.
  AnalysisInput in;
  RankTrace r0 = make_rank(0, 0, 0), r1 = make_rank(1, 0, 1);
  for (int k = 0; k < 3; ++k) {
    const double s = 20.0 * k;
    add(r0, k, Op::step, s, s + 15), add(r1, k, Op::step, s, s + 15);
    add(r0, k, Op::down_proj, s, s + 10), add(r1, k, Op::down_proj, s, s + 13);
    add(r0, k, Op::allreduce_mlp, s + 10, s + 14), add(r1, k, Op::allreduce_mlp, s + 13, s + 14);
  }
  in.ranks = {r0, r1};
  const PointAnalysis pa = analyze(in);
  EXPECT_EQ(pa.straggler.rank, 1);
  EXPECT_NEAR(pa.straggler.arrived_last_share, 1.0, kTol);
  EXPECT_NEAR(pa.straggler.excess_compute_fraction, 0.3, 1e-12);
}

TEST(Analysis, FourRanks) {
  // One group of 4; computes 10, 10, 12, 13 ms; all exit at 14. Two steps.
  // latest_enter = 13, skew = 13 - 10 = 3. wait = 3, 3, 1, 0; transfer = 1 each.
  // Straggler rank 3 (2 of 2 instances); lower_median{10,10,12,13} = 10 -> excess 0.3.
  AnalysisInput in;
  const double compute[4] = {10, 10, 12, 13};
  for (int r = 0; r < 4; ++r) {
    RankTrace t = make_rank(r, 0, r);
    for (int k = 0; k < 2; ++k) {
      const double s = 20.0 * k;
      add(t, k, Op::step, s, s + 15);
      add(t, k, Op::gate_up_proj, s, s + compute[r]);
      add(t, k, Op::allreduce_mlp, s + compute[r], s + 14);
    }
    in.ranks.push_back(t);
  }
  const PointAnalysis pa = analyze(in);
  const double wait[4] = {3, 3, 1, 0};
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(pa.ranks[r].wait_s, 2 * wait[r] * kMs, kTol) << "rank " << r;
    EXPECT_NEAR(pa.ranks[r].transfer_s, 2 * kMs, kTol) << "rank " << r;
    EXPECT_EQ(pa.ranks[r].arrived_last, r == 3 ? 2 : 0);
  }
  EXPECT_EQ(pa.collectives.count, 2);
  EXPECT_NEAR(pa.collectives.skew.p50, 3 * kMs, kTol);
  EXPECT_EQ(pa.straggler.rank, 3);
  EXPECT_NEAR(pa.straggler.arrived_last_share, 1.0, kTol);
  EXPECT_NEAR(pa.straggler.excess_compute_fraction, 0.3, 1e-12);
  // wait_fraction = 2 x (3+3+1+0) / (4 x wall 35) = 14 / 140.
  EXPECT_NEAR(pa.collectives.wait_fraction, 0.1, kTol);
}

TEST(Analysis, EqualEnterTieGoesToLowestRank) {
  AnalysisInput in;
  RankTrace r0 = make_rank(0, 0, 0), r1 = make_rank(1, 0, 1);
  for (RankTrace* t : {&r0, &r1}) step_with_allreduce(*t, 0, 0, 5, 8);
  in.ranks = {r1, r0};  // input order must not matter
  const PointAnalysis pa = analyze(in);
  EXPECT_EQ(pa.ranks[1].rank, 0);
  EXPECT_EQ(pa.ranks[1].arrived_last, 1);
  EXPECT_EQ(pa.ranks[0].arrived_last, 0);
  EXPECT_EQ(pa.straggler.rank, 0);
  EXPECT_NEAR(pa.collectives.skew.max, 0, kTol);
}

TEST(Analysis, HostGapBetweenSteps) {
  // One rank: step 0 [0, 10] fully computed, 5 ms of host work, step 1 [15, 25] fully
  // computed. wall = 25, busy = 20 -> busy 0.8, host gap 0.2; step times stay 10 ms.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  add(t, 0, Op::step, 0, 10), add(t, 0, Op::attention, 0, 10);
  add(t, 1, Op::step, 15, 25), add(t, 1, Op::attention, 15, 25);
  in.ranks = {t};
  const PointAnalysis pa = analyze(in);
  EXPECT_NEAR(pa.ranks[0].wall_s, 25 * kMs, kTol);
  EXPECT_NEAR(pa.busy_fraction, 0.8, kTol);
  EXPECT_NEAR(pa.host_gap_fraction, 0.2, kTol);
  EXPECT_NEAR(pa.step_time.max, 10 * kMs, kTol);
  // All of it is between the steps: none inside.
  EXPECT_NEAR(pa.idle_between_steps_fraction, 0.2, kTol);
  EXPECT_NEAR(pa.idle_in_steps_fraction, 0.0, kTol);
}

TEST(Analysis, IdleSplitsIntoInsideAndBetweenSteps) {
  // One rank: step 0 [0, 10] computes [0, 4] and [6, 10] (2 ms idle inside), 5 ms between
  // steps, step 1 [15, 25] computes [15, 22] (3 ms idle inside). wall 25, busy 4 + 4 + 7 = 15:
  // gap 10/25 = 0.4, of which inside (2 + 3) / 25 = 0.2 and between 5 / 25 = 0.2.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  add(t, 0, Op::step, 0, 10), add(t, 0, Op::qkv_proj, 0, 4), add(t, 0, Op::o_proj, 6, 10);
  add(t, 1, Op::step, 15, 25), add(t, 1, Op::attention, 15, 22);
  in.ranks = {t};
  const PointAnalysis pa = analyze(in);
  EXPECT_NEAR(pa.host_gap_fraction, 0.4, kTol);
  EXPECT_NEAR(pa.idle_in_steps_fraction, 0.2, kTol);
  EXPECT_NEAR(pa.idle_between_steps_fraction, 0.2, kTol);
  EXPECT_NEAR(pa.ranks[0].idle_in_steps_fraction + pa.ranks[0].idle_between_steps_fraction,
              pa.ranks[0].host_gap_fraction, kTol);
}

TEST(Analysis, GapsBeforeLaunchedOpsSplitWhereTheLaunchReturned) {
  // Step [0, 20]: qkv [2, 4] launched (its call returned) at 1, o_proj [7, 9] launched at 6,
  // the all-reduce [10, 12] stamped (no launch), swiglu [15, 20] launched at 13. Gaps: [0, 2]
  // 1 launch + 1 boundary; [4, 7] 2 + 1; [9, 10] unattributed; [12, 15] 1 + 2. Idle 9 ms.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  add(t, 0, Op::step, 0, 20);
  add(t, 0, Op::qkv_proj, 2, 4, 0, 1);
  add(t, 0, Op::o_proj, 7, 9, 0, 6);
  add(t, 0, Op::allreduce_attn, 10, 12);
  add(t, 0, Op::swiglu, 15, 20, 0, 13);
  in.ranks = {t};
  const PointAnalysis pa = analyze(in);
  EXPECT_NEAR(pa.idle_in_steps_fraction, 9.0 / 20, kTol);
  EXPECT_NEAR(pa.idle_launch_fraction, 4.0 / 20, kTol);
  EXPECT_NEAR(pa.idle_boundary_fraction, 4.0 / 20, kTol);
  EXPECT_EQ(pa.launch_records, 3);
  // A launch that returned after the gap closed (the kernel started inside the call) caps at
  // the gap; one that returned before the previous op ended counts none of it.
  RankTrace u = make_rank(0, 0, 0);
  add(u, 0, Op::step, 0, 10);
  add(u, 0, Op::qkv_proj, 0, 4, 0, 0.5);
  add(u, 0, Op::o_proj, 6, 8, 0, 7);   // returned at 7, inside the kernel: all 2 ms waited
  add(u, 0, Op::swiglu, 9, 10, 0, 3);  // returned at 3, before o_proj ended: 1 ms boundary
  in.ranks = {u};
  const PointAnalysis pb = analyze(in);
  EXPECT_NEAR(pb.idle_launch_fraction, 2.0 / 10, kTol);
  EXPECT_NEAR(pb.idle_boundary_fraction, 1.0 / 10, kTol);
}

TEST(Analysis, NoLaunchRecordsNoLaunchSplit) {
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  add(t, 0, Op::step, 0, 10), add(t, 0, Op::qkv_proj, 0, 4), add(t, 0, Op::o_proj, 6, 10);
  in.ranks = {t};
  const PointAnalysis pa = analyze(in);
  EXPECT_EQ(pa.launch_records, 0);
  EXPECT_NEAR(pa.idle_launch_fraction + pa.idle_boundary_fraction, 0, kTol);
  EXPECT_NEAR(pa.idle_in_steps_fraction, 0.2, kTol);
}

// One rank, 4 steps of 10 ms; compute [s+1, s+3] in every step except step 2 (idle).
AnalysisInput idle_window_trace(double window_ms) {
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  for (int k = 0; k < 4; ++k) {
    add(t, k, Op::step, 10.0 * k, 10.0 * k + 10);
    if (k != 2) add(t, k, Op::swiglu, 10.0 * k + 1, 10.0 * k + 3);
  }
  in.ranks = {t};
  in.occupancy_window_s = window_ms * kMs;
  return in;
}

TEST(Analysis, OccupancyCountsWindowsWithAnyWork) {
  // 10 ms windows over [0, 40]: work in windows 0, 1, 3, not 2 -> 3/4 = 0.75, while busy is
  // only 6/40 = 0.15: occupancy overstates work, which is the article's point.
  PointAnalysis pa = analyze(idle_window_trace(10));
  EXPECT_NEAR(pa.occupancy_sampled, 0.75, kTol);
  EXPECT_NEAR(pa.busy_fraction, 0.15, kTol);
  // 1/6 s windows (the NVML default) over a 40 ms wall: one window = the wall, occupied.
  pa = analyze(idle_window_trace(1000.0 / 6));
  EXPECT_NEAR(pa.occupancy_sampled, 1.0, kTol);
  // 40 ms windows: exactly one full window.
  EXPECT_NEAR(analyze(idle_window_trace(40)).occupancy_sampled, 1.0, kTol);
  // 15 ms windows: [0,15) [15,30) full, tail [30,40] = 10 ms >= 7.5 counts. Work at 1-3,
  // 11-13 (window 0) and 31-33 (window 2); window 1 idle -> 2/3.
  EXPECT_NEAR(analyze(idle_window_trace(15)).occupancy_sampled, 2.0 / 3, kTol);
  // 25 ms windows: [0,25) full, tail 15 ms >= 12.5 counts: both hold work -> 1.
  EXPECT_NEAR(analyze(idle_window_trace(25)).occupancy_sampled, 1.0, kTol);
}

TEST(Analysis, OccupancyDropsShortTailWindow) {
  // Work only at [0, 1] and [36, 39] of a 40 ms wall with 12 ms windows: windows [0,12)
  // [12,24) [24,36) are full; the 4 ms tail is < 6 ms so it is dropped -> 1 of 3 occupied.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  add(t, 0, Op::step, 0, 40), add(t, 0, Op::rope, 0, 1), add(t, 0, Op::rope, 36, 39);
  in.ranks = {t};
  in.occupancy_window_s = 12 * kMs;
  EXPECT_NEAR(analyze(in).occupancy_sampled, 1.0 / 3, kTol);
}

TEST(Analysis, OccupancyIntervalSpanningWindows) {
  // One interval [5, 30] over a 40 ms step with 10 ms windows touches windows 0, 1, 2 -> 0.75.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  add(t, 0, Op::step, 0, 40), add(t, 0, Op::o_proj, 5, 30), add(t, 0, Op::rope, 6, 7);
  in.ranks = {t};
  in.occupancy_window_s = 10 * kMs;
  EXPECT_NEAR(analyze(in).occupancy_sampled, 0.75, kTol);
}

TEST(Analysis, RecordOrderDoesNotMatter) {
  // Matching is by (step, layer, op), not by position: reversed records give the same answer.
  AnalysisInput in = two_rank_late(true);
  for (RankTrace& t : in.ranks) std::reverse(t.segs.begin(), t.segs.end());
  expect_two_rank_late(analyze(in));
}

TEST(Analysis, ClockConditionViolation) {
  // Rank 0 enters at 5 and exits at 6, before rank 1 entered at 7: impossible on a correct
  // common clock. x(0) = 6 < 7 - 0 -> 1 violation; with uncertainty 1.5 ms, 6 >= 5.5 -> none.
  AnalysisInput in;
  RankTrace r0 = make_rank(0, 0, 0), r1 = make_rank(1, 0, 1);
  step_with_allreduce(r0, 0, 0, 5, 6);
  step_with_allreduce(r1, 0, 0, 7, 8);
  in.ranks = {r0, r1};
  PointAnalysis pa = analyze(in);
  EXPECT_EQ(pa.clock_condition_violations, 1);
  EXPECT_EQ(pa.ranks[0].clock_condition_violations, 1);
  EXPECT_EQ(pa.ranks[1].clock_condition_violations, 0);
  in.clock_uncertainty_s = 1.5 * kMs;
  pa = analyze(in);
  EXPECT_EQ(pa.clock_condition_violations, 0);
}

TEST(Analysis, TwoGroupsAreMatchedSeparately) {
  // Group 0 = ranks 0,1: rank 1 enters 2 ms late (5 vs 7, exit 8).
  // Group 1 = ranks 2,3: rank 2 enters 3 ms late (6 vs 3, exit 9), and group 1's step 1 takes
  // 12 ms. Same keys in both groups; a cross-group match would mix the waits.
  AnalysisInput in;
  RankTrace r0 = make_rank(0, 0, 0), r1 = make_rank(1, 0, 1);
  RankTrace r2 = make_rank(2, 1, 0), r3 = make_rank(3, 1, 1);
  for (int k = 0; k < 2; ++k) {
    const double s = 20.0 * k;
    step_with_allreduce(r0, k, s, 5, 8);
    step_with_allreduce(r1, k, s, 7, 8);
    step_with_allreduce(r2, k, s, 6, 9);
    step_with_allreduce(r3, k, s, 3, 9);
  }
  r3.segs[3].t1 = 32 * kMs;  // step 1 of rank 3: [20, 32]
  in.ranks = {r0, r1, r2, r3};
  in.tokens_per_step = 4;
  const PointAnalysis pa = analyze(in);
  EXPECT_EQ(pa.collectives.count, 4);
  EXPECT_NEAR(pa.ranks[0].wait_s, 2 * 2 * kMs, kTol);
  EXPECT_NEAR(pa.ranks[1].wait_s, 0, kTol);
  EXPECT_NEAR(pa.ranks[2].wait_s, 0, kTol);
  EXPECT_NEAR(pa.ranks[3].wait_s, 2 * 3 * kMs, kTol);
  EXPECT_EQ(pa.ranks[1].arrived_last, 2);
  EXPECT_EQ(pa.ranks[2].arrived_last, 2);
  // Tie on arrived_last (2 and 2) goes to the lowest rank; share is over its own group's 2.
  EXPECT_EQ(pa.straggler.rank, 1);
  EXPECT_NEAR(pa.straggler.arrived_last_share, 1.0, kTol);
  // step_time_s: group 0 {10, 10}, group 1 {10, max(10, 12)} -> mean 10.5 ms.
  ASSERT_EQ(pa.step_time_s.size(), 4u);
  EXPECT_NEAR(pa.step_time_s[3], 12 * kMs, kTol);
  // tokens/s = 2 groups x 4 tokens / 10.5 ms.
  EXPECT_NEAR(pa.tokens_per_s, 8 / (10.5 * kMs), 1e-9);
}

TEST(Analysis, StepTimeIsMaxOverRanksAndRankP50IsOwn) {
  // Rank 0 steps 10, 10, 10; rank 1 steps 12, 9, 11 -> point steps 12, 10, 11 (p50 11, mean
  // 11); rank p50s 10 and 11.
  AnalysisInput in;
  RankTrace r0 = make_rank(0, 0, 0), r1 = make_rank(1, 0, 1);
  const double d1[3] = {12, 9, 11};
  for (int k = 0; k < 3; ++k) {
    add(r0, k, Op::step, 20.0 * k, 20.0 * k + 10);
    add(r1, k, Op::step, 20.0 * k, 20.0 * k + d1[k]);
  }
  in.ranks = {r0, r1};
  in.tokens_per_step = 11;
  const PointAnalysis pa = analyze(in);
  ASSERT_EQ(pa.step_time_s.size(), 3u);
  EXPECT_NEAR(pa.step_time_s[0], 12 * kMs, kTol);
  EXPECT_NEAR(pa.step_time_s[1], 10 * kMs, kTol);
  EXPECT_NEAR(pa.step_time.p50, 11 * kMs, kTol);
  EXPECT_NEAR(pa.ranks[0].step_time_p50_s, 10 * kMs, kTol);
  EXPECT_NEAR(pa.ranks[1].step_time_p50_s, 11 * kMs, kTol);
  EXPECT_NEAR(pa.tokens_per_s, 1000, 1e-9);  // 11 tokens / 11 ms
}

TEST(Analysis, DecodeB1IsBusyButFarBelowPeakFlops) {
  // B=1 bf16 decode: intensity 1 FLOP/byte; ridge = 1e15 / 3e12 = 333.3 -> ceiling 0.003.
  // One rank (TP=1) computing through the whole 1 ms step, 2.4e9 bytes and 2.4e9 FLOP:
  // mbu = 2.4e9 / (1e-3 x 3e12) = 0.8; mfu = 2.4e9 / (1e-3 x 1e15) = 0.0024 = 0.8 x ceiling;
  // roofline_fraction = 2.4e12 / min(1e15, 1 x 3e12) = 0.8. Busy and occupancy are 1.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  for (int k = 0; k < 5; ++k) {
    add(t, k, Op::step, k, k + 1.0);
    add(t, k, Op::gate_up_proj, k, k + 1.0);
  }
  in.ranks = {t};
  in.step_flops = 2.4e9, in.step_bytes = 2.4e9;
  in.peak_flops = 1e15, in.peak_bw = 3e12;
  in.tokens_per_step = 1;
  const PointAnalysis pa = analyze(in);
  EXPECT_NEAR(pa.intensity, 1.0, kTol);
  EXPECT_NEAR(pa.ridge, 1e15 / 3e12, 1e-9);
  EXPECT_NEAR(pa.mfu_ceiling, std::min(1.0, pa.intensity / pa.ridge), kTol);
  EXPECT_NEAR(pa.mfu_ceiling, 0.003, 1e-12);
  EXPECT_NEAR(pa.mbu, 0.8, 1e-9);
  EXPECT_NEAR(pa.mfu, 0.0024, 1e-12);
  EXPECT_NEAR(pa.roofline_fraction, 0.8, 1e-9);
  EXPECT_NEAR(pa.mbu_compute, 0.8, 1e-9);  // compute fills the step
  EXPECT_NEAR(pa.ranks[0].mbu, 0.8, 1e-9);
  EXPECT_NEAR(pa.busy_fraction, 1.0, kTol);
  EXPECT_NEAR(pa.occupancy_sampled, 1.0, kTol);
  EXPECT_NEAR(pa.tokens_per_s, 1000, 1e-6);
  // No collectives: the straggler is the rank with most compute, with share 0.
  EXPECT_EQ(pa.collectives.count, 0);
  EXPECT_EQ(pa.straggler.rank, 0);
  EXPECT_EQ(pa.straggler.arrived_last_share, 0);
  EXPECT_EQ(pa.straggler.excess_compute_fraction, 0);
  // Prefill-like intensity (1000 FLOP/byte) is past the ridge: the ceiling clamps to 1.
  in.step_flops = 2.4e12;
  EXPECT_NEAR(analyze(in).mfu_ceiling, 1.0, kTol);
}

TEST(Analysis, ComputeVariantsUseComputePerStep) {
  // From two_rank_late: compute per step 5 and 7 ms -> mean 6 ms; step p50 10 ms.
  AnalysisInput in = two_rank_late(false);
  in.step_bytes = 3e9, in.step_flops = 6e9, in.peak_bw = 1e12, in.peak_flops = 1e14;
  const PointAnalysis pa = analyze(in);
  EXPECT_NEAR(pa.mbu, 3e9 / (10 * kMs * 1e12), 1e-12);         // 0.3
  EXPECT_NEAR(pa.mbu_compute, 3e9 / (6 * kMs * 1e12), 1e-12);  // 0.5
  EXPECT_NEAR(pa.mfu_compute, 6e9 / (6 * kMs * 1e14), 1e-12);  // 0.01
  EXPECT_NEAR(pa.ranks[1].mbu_compute, 3e9 / (7 * kMs * 1e12), 1e-12);
}

TEST(Analysis, ServingPointIsTotalsOverTotals) {
  // A serving run: 4 decode steps of 1 ms doing 1e9 FLOP each, then one 12 ms prefill step
  // doing 1.2e11 FLOP. Peak 1e14 FLOP/s: each decode step runs at MFU 0.01 and the prefill
  // step at 0.1. The point's cost is the mean step, (4e9 + 1.2e11) / 5 = 2.48e10 FLOP.
  // Over the p50 step (1 ms) that is MFU 0.248: no step reached it. Over the mean step
  // ((4 + 12) / 5 = 3.2 ms) it is 0.0775, total FLOPs over total time, between the two.
  AnalysisInput in;
  RankTrace t = make_rank(0, 0, 0);
  for (int k = 0; k < 4; ++k) add(t, k, Op::step, k, k + 1.0), add(t, k, Op::down_proj, k, k + 1.0);
  add(t, 4, Op::step, 4, 16), add(t, 4, Op::attention, 4, 16);
  in.ranks = {t};
  in.step_flops = 2.48e10, in.step_bytes = 1e9, in.peak_flops = 1e14, in.peak_bw = 1e12;
  const PointAnalysis fixed = analyze(in);
  EXPECT_NEAR(fixed.mfu, 0.248, 1e-9);  // the p50 basis overstates it
  in.basis = StepTimeBasis::mean;
  const PointAnalysis serve = analyze(in);
  const double total_flops = 4 * 1e9 + 1.2e11, total_s = 16 * kMs;
  EXPECT_NEAR(serve.mfu, total_flops / (total_s * 1e14), 1e-12);
  EXPECT_NEAR(serve.mfu, 0.0775, 1e-12);
  EXPECT_LE(serve.mfu, 0.1);  // no faster than its fastest step
  EXPECT_NEAR(serve.ranks[0].mfu, serve.mfu, 1e-12);
  EXPECT_NEAR(serve.mbu, 1e9 / (3.2 * kMs * 1e12), 1e-12);
  EXPECT_NEAR(serve.roofline_fraction * std::min(1e14, serve.intensity * 1e12),
              2.48e10 / (3.2 * kMs), 1e-3);
}

TEST(Analysis, EmptyInputDoesNotCrash) {
  const PointAnalysis pa = analyze(AnalysisInput{});
  EXPECT_TRUE(pa.ranks.empty());
  EXPECT_EQ(pa.straggler.rank, -1);
  // Nothing measured: the ratios have no denominator, so no value (null in the results).
  EXPECT_TRUE(std::isnan(pa.tokens_per_s));
  EXPECT_TRUE(std::isnan(pa.mbu));
  AnalysisInput one;
  one.ranks.push_back(make_rank(0, 0, 0));  // a rank with no records
  const PointAnalysis pb = analyze(one);
  EXPECT_EQ(pb.ranks[0].wall_s, 0);
  EXPECT_EQ(pb.busy_fraction, 0);
}

TEST(UnionLength, ClipsSortsAndMerges) {
  // [5,8] u [1,3] u [2,4] u [7,12] clipped to [0,10]: [1,4] + [5,10] = 3 + 5 = 8.
  EXPECT_DOUBLE_EQ(union_length({{5, 8}, {1, 3}, {2, 4}, {7, 12}}, 0, 10), 8.0);
  EXPECT_DOUBLE_EQ(union_length({}, 0, 10), 0.0);
  EXPECT_DOUBLE_EQ(union_length({{-5, -1}, {11, 20}}, 0, 10), 0.0);
  EXPECT_DOUBLE_EQ(union_length({{0, 2}, {2, 4}}, 0, 10), 4.0);  // touching
}

}  // namespace
}  // namespace tpb
