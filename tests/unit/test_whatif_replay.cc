// The replay behind tpbench whatif on hand-built two-rank timelines (times in ms). Each step:
// 2 ms of host time, then per layer half: compute, an all-reduce that exits 1 ms after the
// later rank enters; then 1 ms of compute to the step's end.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

#include "harness/analysis/replay.h"
#include "tests/support/segment_ms.h"

namespace tpb {
namespace {

using test::add;
using test::kMs;
constexpr double kTol = 1e-9;

// Runs the steps as the hardware would, with rank r's half-layer compute compute[r][k] in
// step k and tail compute tail[r] (1 ms when not given), and records them as the harness does.
// Steps follow each other with a 0.5 ms gap.
std::vector<RankTrace> run(const std::vector<std::vector<double>>& compute, double host = 2,
                           std::vector<double> tail = {}, std::vector<double> host_by_rank = {}) {
  tail.resize(compute.size(), 1.0);
  host_by_rank.resize(compute.size(), host);
  std::vector<RankTrace> ranks(compute.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r].rank = ranks[r].group_rank = int(r);
  std::vector<double> t(ranks.size(), 0.0);
  for (std::size_t k = 0; k < compute[0].size(); ++k) {
    std::vector<double> begin = t;
    for (std::size_t r = 0; r < t.size(); ++r) t[r] += host_by_rank[r];
    for (Op coll : {Op::allreduce_attn, Op::allreduce_mlp}) {
      double latest = 0;
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        add(ranks[r], int(k), coll == Op::allreduce_attn ? Op::o_proj : Op::down_proj, t[r],
            t[r] + compute[r][k]);
        t[r] += compute[r][k];
        latest = std::max(latest, t[r]);
      }
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        add(ranks[r], int(k), coll, t[r], latest + 1);
        t[r] = latest + 1;
      }
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      add(ranks[r], int(k), Op::residual_mlp, t[r], t[r] + tail[r]);
      t[r] += tail[r];
      add(ranks[r], int(k), Op::step, begin[r], t[r]);
      t[r] += 0.5;
    }
  }
  return ranks;
}

TEST(WhatifReplay, UnchangedReplayGivesBackTheMeasuredSteps) {
  const auto ranks = run({{5, 6, 5}, {7, 7.5, 9}});
  const auto replayed = replay_step_times(replay_group(ranks));
  const auto measured = measured_step_times(ranks);
  ASSERT_EQ(replayed.size(), 3u);
  ASSERT_EQ(measured.size(), 3u);
  // Step 0: 2 host + (7 + 1) x 2 + 1 = 19 ms on the slow rank's clock.
  EXPECT_NEAR(measured[0], 19 * kMs, kTol);
  for (std::size_t k = 0; k < 3; ++k) EXPECT_NEAR(replayed[k], measured[k], kTol);
}

TEST(WhatifReplay, NoStragglerScalesTheSlowRankToTheLowerMedian) {
  // Rank 1 computes 1.4x rank 0 everywhere; without its excess every step is rank 0's:
  // 2 + (5 + 1) x 2 + 1 = 15 ms.
  const auto ranks = run({{5, 5, 5}, {7, 7, 7}}, 2, {1, 1.4});
  const auto t = replay_step_times(without_straggler(replay_group(ranks)));
  for (double s : t) EXPECT_NEAR(s, 15 * kMs, kTol);
  // The same as a run measured without the slow rank.
  const auto clean = measured_step_times(run({{5, 5, 5}, {5, 5, 5}}));
  for (std::size_t k = 0; k < t.size(); ++k) EXPECT_NEAR(t[k], clean[k], kTol);
}

TEST(WhatifReplay, NoStragglerKeepsTheStepToStepNoise) {
  // Rank 1 is 1.4x rank 0 in every step, whose compute varies: removing the excess gives
  // back rank 0's own steps, not one median step repeated.
  const auto ranks = run({{5, 6, 4}, {7, 8.4, 5.6}}, 2, {1, 1.4});
  const auto t = replay_step_times(without_straggler(replay_group(ranks)));
  const auto clean = measured_step_times(run({{5, 6, 4}, {5, 6, 4}}));
  for (std::size_t k = 0; k < t.size(); ++k) EXPECT_NEAR(t[k], clean[k], kTol);
  EXPECT_NEAR(t[1], 17 * kMs, kTol);
}

TEST(WhatifReplay, NoStragglerTakesAnExcessOfHostTimeToo) {
  // Rank 1 has 5 ms of host time before each step against rank 0's 2 (straggler.cause's
  // outside_ops); computes alike. Fixed, every step is the run with 2 ms on both: 15 ms.
  const auto ranks = run({{5, 5, 5}, {5, 5, 5}}, 2, {}, {2, 5});
  const auto t = replay_step_times(without_straggler(replay_group(ranks)));
  const auto clean = measured_step_times(run({{5, 5, 5}, {5, 5, 5}}));
  ASSERT_EQ(t.size(), 3u);
  for (std::size_t k = 0; k < t.size(); ++k) EXPECT_NEAR(t[k], clean[k], kTol);
  EXPECT_NEAR(t[0], 15 * kMs, kTol);
}

TEST(WhatifReplay, NoStragglerOnABalancedRunChangesNothing) {
  const auto ranks = run({{5, 6, 5}, {5, 6, 5}});
  const auto t = replay_step_times(without_straggler(replay_group(ranks)));
  const auto m = measured_step_times(ranks);
  for (std::size_t k = 0; k < t.size(); ++k) EXPECT_NEAR(t[k], m[k], kTol);
}

TEST(WhatifReplay, NoHostGapRemovesTheHostTime) {
  const auto ranks = run({{5, 5}, {5, 5}}, 2.0);
  const auto t = replay_step_times(without_host_gap(replay_group(ranks)));
  const auto clean = measured_step_times(run({{5, 5}, {5, 5}}, 0.0));
  ASSERT_EQ(t.size(), 2u);
  for (std::size_t k = 0; k < t.size(); ++k) EXPECT_NEAR(t[k], clean[k], kTol);
  EXPECT_NEAR(t[0], 13 * kMs, kTol);
}

TEST(WhatifReplay, FewerKernelsRemovesInStepIdleAndFloorsElementwiseOps) {
  // Each step: 2 ms host, 5 + 5 ms GEMMs (o_proj, down_proj), 1 + 1 ms all-reduce exits,
  // 3 ms residual_mlp tail: 17 ms. With the host gone and residual_mlp floored at 0.5 ms:
  // 5 + 1 + 5 + 1 + 0.5 = 12.5 ms. The GEMMs have no floor and keep their time.
  const auto ranks = run({{5, 5}, {5, 5}}, 2.0, {3, 3});
  const std::map<int, double> floors = {{static_cast<int>(Op::residual_mlp), 0.5 * kMs}};
  const auto t = replay_step_times(with_fewer_kernels(replay_group(ranks), floors));
  ASSERT_EQ(t.size(), 2u);
  for (double x : t) EXPECT_NEAR(x, 12.5 * kMs, kTol);
  // A floor above the op's time changes nothing: 15 ms, the host removed only.
  const std::map<int, double> high = {{static_cast<int>(Op::residual_mlp), 9 * kMs}};
  for (double x : replay_step_times(with_fewer_kernels(replay_group(ranks), high)))
    EXPECT_NEAR(x, 15 * kMs, kTol);
}

TEST(WhatifReplay, NoJitterPutsEachOpAtItsMedianAcrossSteps) {
  // Rank 0's half-layer compute is 5, 5, 11 (one noisy step); its median is 5. Rank 1: 5.
  const auto ranks = run({{5, 5, 11}, {5, 5, 5}});
  const auto t = replay_step_times(without_jitter(replay_group(ranks)));
  for (double s : t) EXPECT_NEAR(s, 15 * kMs, kTol);
}

TEST(WhatifReplay, RanksWhoseCollectivesDoNotLineUpAreRefused) {
  auto ranks = run({{5, 5}, {5, 5}});
  ranks[1].segs.erase(ranks[1].segs.begin() + 1);  // step 0's first all-reduce on rank 1
  EXPECT_THROW(replay_group(ranks), std::invalid_argument);
}

}  // namespace
}  // namespace tpb
