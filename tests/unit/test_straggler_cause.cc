// straggler_cause on hand-built per-op times (ms per step) whose verdicts follow from the
// thresholds in straggler_cause.cc, worked out in the comments; and the analysis's caused wait
// on a timeline where the rank that arrives last most often is not the one the group waits for.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/analysis/analysis.h"
#include "harness/analysis/straggler_cause.h"
#include "tests/support/segment_ms.h"

namespace tpb {
namespace {

using test::kMs;

std::size_t at(Op op) {
  return static_cast<std::size_t>(op);
}

// A decode-like layer: four GEMMs below the ridge and the element-wise ops (no FLOPs), or a
// prefill-like one where the GEMMs are above it. Ridge 100 FLOP/B.
CauseInput layer_input(bool gemms_above_ridge) {
  CauseInput in;
  in.ridge = 100;
  for (Op op : {Op::rmsnorm_attn, Op::rope, Op::attention, Op::swiglu, Op::residual_mlp})
    in.priced[at(op)] = true;
  for (Op op : {Op::qkv_proj, Op::o_proj, Op::gate_up_proj, Op::down_proj}) {
    in.priced[at(op)] = true;
    in.intensity[at(op)] = gemms_above_ridge ? 400 : 2;
  }
  in.intensity[at(Op::attention)] = 1;
  return in;
}

// Op times of one rank: GEMMs 4 ms each, attention 2, element-wise 0.5 each (20 ms in all, the
// five memory-bound ops 4 ms of it), 1 ms outside the ops.
CauseRank rank_of(int rank, int group = 0) {
  CauseRank r;
  r.rank = rank, r.group = group;
  for (Op op : {Op::qkv_proj, Op::o_proj, Op::gate_up_proj, Op::down_proj})
    r.op_s_per_step[at(op)] = 4 * kMs;
  r.op_s_per_step[at(Op::attention)] = 2 * kMs;
  for (Op op : {Op::rmsnorm_attn, Op::rope, Op::swiglu, Op::residual_mlp})
    r.op_s_per_step[at(op)] = 0.5 * kMs;
  r.outside_ops_s_per_step = 1 * kMs;
  r.device = "GPU";
  return r;
}

CauseInput group_of(CauseInput in, const CauseRank& slow, int n = 4) {
  for (int i = 0; i < n; ++i) in.ranks.push_back(i == slow.rank ? slow : rank_of(i));
  in.straggler = slow.rank;
  return in;
}

TEST(StragglerCause, AloneInItsGroupHasNoPeers) {
  CauseInput in = layer_input(false);
  in.ranks = {rank_of(0, 0), rank_of(1, 1)};
  in.straggler = 1;
  EXPECT_EQ(straggler_cause(in).kind, "no_peers");
}

TEST(StragglerCause, TwoPercentMoreIsNoise) {
  // +0.5 ms on 21 ms of busy time (20 in ops, 1 outside) is 2.4%, under 3%.
  CauseRank s = rank_of(2);
  s.op_s_per_step[at(Op::qkv_proj)] += 0.5 * kMs;
  const StragglerCause c = straggler_cause(group_of(layer_input(false), s));
  EXPECT_EQ(c.kind, "no_excess");
  EXPECT_NEAR(c.compute_excess_s, 0.5 * kMs, 1e-12);
}

TEST(StragglerCause, HostTimeOutsideTheOps) {
  // 3 ms more outside the ops against 1 ms more inside them.
  CauseRank s = rank_of(1);
  s.outside_ops_s_per_step += 3 * kMs;
  s.op_s_per_step[at(Op::qkv_proj)] += 1 * kMs;
  const StragglerCause c = straggler_cause(group_of(layer_input(false), s));
  EXPECT_EQ(c.kind, "outside_ops");
  EXPECT_NEAR(c.outside_ops_excess_s, 3 * kMs, 1e-12);
}

TEST(StragglerCause, InjectedSegments) {
  CauseRank s = rank_of(1);
  s.op_s_per_step[at(Op::injected)] = 6 * kMs;
  EXPECT_EQ(straggler_cause(group_of(layer_input(false), s)).kind, "injected_work");
}

TEST(StragglerCause, OneOp) {
  // Attention x3: 4 ms of 4 ms extra (100%) on an op with 2 / 20 = 10% of the time.
  CauseRank s = rank_of(3);
  s.op_s_per_step[at(Op::attention)] = 6 * kMs;
  const StragglerCause c = straggler_cause(group_of(layer_input(false), s));
  EXPECT_EQ(c.kind, "one_op");
  ASSERT_TRUE(c.top_op);
  EXPECT_EQ(*c.top_op, "attention");
  EXPECT_NEAR(c.top_op_share, 1.0, 1e-12);
}

TEST(StragglerCause, MemoryBoundOpsAtPrefill) {
  // Every op below the ridge (attention and element-wise: 4 ms) x1.5; the GEMMs above it
  // x1.01: 0.5 against 0.01, so memory. Attention's 1 ms is 46% of the 2.16 ms extra: no
  // single op.
  CauseRank s = rank_of(1);
  for (Op op : {Op::rmsnorm_attn, Op::rope, Op::attention, Op::swiglu, Op::residual_mlp})
    s.op_s_per_step[at(op)] *= 1.5;
  for (Op op : {Op::qkv_proj, Op::o_proj, Op::gate_up_proj, Op::down_proj})
    s.op_s_per_step[at(op)] *= 1.01;
  const StragglerCause c = straggler_cause(group_of(layer_input(true), s));
  EXPECT_EQ(c.kind, "memory_bound_ops");
  EXPECT_NEAR(*c.memory_bound_ratio, 1.5, 1e-12);
  EXPECT_NEAR(*c.flop_bound_ratio, 1.01, 1e-12);
}

TEST(StragglerCause, FlopBoundOpsAtPrefill) {
  CauseRank s = rank_of(1);
  for (Op op : {Op::qkv_proj, Op::o_proj, Op::gate_up_proj, Op::down_proj})
    s.op_s_per_step[at(op)] *= 1.4;
  const StragglerCause c = straggler_cause(group_of(layer_input(true), s));
  EXPECT_EQ(c.kind, "flop_bound_ops");
  EXPECT_NEAR(*c.flop_bound_ratio, 1.4, 1e-12);
  EXPECT_NEAR(*c.memory_bound_ratio, 1.0, 1e-12);
}

TEST(StragglerCause, EveryOpAlikeOnBothSides) {
  // x1.3 everywhere: neither side is 3x the other.
  CauseRank s = rank_of(1);
  for (double& t : s.op_s_per_step) t *= 1.3;
  const StragglerCause c = straggler_cause(group_of(layer_input(true), s));
  EXPECT_EQ(c.kind, "every_op");
  EXPECT_EQ(c.text.find("not told apart"), std::string::npos);
}

TEST(StragglerCause, AtDecodeMemoryAndClockAreNotToldApart) {
  // All ops below the ridge: a memory-side slowdown reads as every op, and says why.
  CauseRank s = rank_of(1);
  for (double& t : s.op_s_per_step) t *= 1.3;
  const StragglerCause c = straggler_cause(group_of(layer_input(false), s));
  EXPECT_EQ(c.kind, "every_op");
  EXPECT_FALSE(c.flop_bound_ratio);
  EXPECT_NE(c.text.find("not told apart"), std::string::npos);
}

TEST(StragglerCause, RunsStampedWholeAreNotSplit) {
  CauseInput in = layer_input(false);
  for (int i = 0; i < 2; ++i) {
    CauseRank r;
    r.rank = i;
    r.op_s_per_step[at(Op::compute)] = (i == 1 ? 30 : 20) * kMs;
    in.ranks.push_back(r);
  }
  in.straggler = 1;
  EXPECT_EQ(straggler_cause(in).kind, "compute_unsplit");
}

TEST(StragglerCause, AgainstTheLowerMedianOfItsOwnGroup) {
  // Group 0: ranks 0, 1 at the base, rank 2 with attention x1.5 (a second slow rank), rank 3
  // x3 on attention. Lower median of {2, 2, 3, 6} is 2, so the excess is 4 ms. Group 1's rank
  // at 10x must not enter.
  CauseInput in = layer_input(false);
  CauseRank mid = rank_of(2), s = rank_of(3), other = rank_of(4, 1);
  mid.op_s_per_step[at(Op::attention)] = 3 * kMs;
  s.op_s_per_step[at(Op::attention)] = 6 * kMs;
  for (double& t : other.op_s_per_step) t *= 10;
  in.ranks = {rank_of(0), rank_of(1), mid, s, other};
  in.straggler = 3;
  const StragglerCause c = straggler_cause(in);
  EXPECT_NEAR(c.compute_excess_s, 4 * kMs, 1e-12);
  EXPECT_EQ(c.kind, "one_op");
}

TEST(StragglerCause, EvidenceFromTheRanksOwnCounters) {
  CauseInput in = layer_input(false);
  CauseRank s = rank_of(1);
  for (double& t : s.op_s_per_step) t *= 1.5;
  s.descheduled_fraction = 0.4;
  s.sm_clock_mhz = 1200;
  s.throttle_reasons = {"hw_slowdown"};
  s.device = "GPU B";
  in = group_of(in, s, 2);
  in.ranks[0].descheduled_fraction = 0.01;
  in.ranks[0].sm_clock_mhz = 1980;
  const StragglerCause c = straggler_cause(in);
  ASSERT_EQ(c.evidence.size(), 3u);
  EXPECT_NE(c.evidence[0].find("off its core 40%"), std::string::npos);
  EXPECT_NE(c.evidence[1].find("1200 MHz against 1980 MHz"), std::string::npos);
  EXPECT_NE(c.evidence[1].find("hw_slowdown"), std::string::npos);
  EXPECT_NE(c.evidence[2].find("GPU B"), std::string::npos);
}

TEST(StragglerCause, EqualCountersAreNoEvidence) {
  CauseRank s = rank_of(1);
  for (double& t : s.op_s_per_step) t *= 1.5;
  s.descheduled_fraction = 0.03;
  CauseInput in = group_of(layer_input(false), s, 2);
  in.ranks[0].descheduled_fraction = 0.0;
  EXPECT_TRUE(straggler_cause(in).evidence.empty());
}

// Two ranks, 4 steps of 10 ms with two all-reduces each. At the first, rank 0 enters 0.1 ms
// after rank 1; at the second, rank 1 enters 3 ms after rank 0. Rank 0 arrives last in 4 of 8
// (the tie of counts goes to the lower rank) and costs its peer 4 x 0.1 = 0.4 ms of wait; rank 1
// costs 4 x 3 = 12 ms. The group's wait is 12.4 ms.
TEST(CausedWait, TheRankTheGroupWaitsForIsNotTheOneLastMostOften) {
  AnalysisInput in;
  RankTrace r0, r1;
  r1.rank = 1, r1.group_rank = 1;
  for (int k = 0; k < 4; ++k) {
    const double s = 10.0 * k;
    test::add(r0, k, Op::step, s, s + 10);
    test::add(r1, k, Op::step, s, s + 10);
    test::add(r0, k, Op::qkv_proj, s, s + 2.1);
    test::add(r1, k, Op::qkv_proj, s, s + 2);
    test::add(r0, k, Op::allreduce_attn, s + 2.1, s + 3);
    test::add(r1, k, Op::allreduce_attn, s + 2, s + 3);
    test::add(r0, k, Op::down_proj, s + 3, s + 4);
    test::add(r1, k, Op::down_proj, s + 3, s + 7);
    test::add(r0, k, Op::allreduce_mlp, s + 4, s + 8);
    test::add(r1, k, Op::allreduce_mlp, s + 7, s + 8);
  }
  in.ranks = {r0, r1};
  in.tokens_per_step = 1;
  const PointAnalysis pa = analyze(in);
  EXPECT_EQ(pa.straggler.rank, 0);
  EXPECT_NEAR(pa.ranks[0].caused_wait_s, 0.4 * kMs, 1e-12);
  EXPECT_NEAR(pa.ranks[1].caused_wait_s, 12 * kMs, 1e-12);
  EXPECT_NEAR(pa.straggler.caused_wait_share, 0.4 / 12.4, 1e-12);
  EXPECT_EQ(pa.straggler.costliest_rank, 1);
  EXPECT_NEAR(pa.straggler.costliest_share, 12 / 12.4, 1e-12);
}

// Both ranks enter every all-reduce at once: nobody waited, so neither share is a number (null
// in results), and the costliest rank falls back to the straggler.
TEST(CausedWait, AGroupThatNeverWaitedHasNoShares) {
  AnalysisInput in;
  RankTrace r0, r1;
  r1.rank = 1, r1.group_rank = 1;
  for (int k = 0; k < 2; ++k) {
    const double s = 10.0 * k;
    for (RankTrace* r : {&r0, &r1}) {
      test::add(*r, k, Op::step, s, s + 10);
      test::add(*r, k, Op::qkv_proj, s, s + 2);
      test::add(*r, k, Op::allreduce_attn, s + 2, s + 3);
    }
  }
  in.ranks = {r0, r1};
  in.tokens_per_step = 1;
  const PointAnalysis pa = analyze(in);
  EXPECT_TRUE(std::isnan(pa.straggler.caused_wait_share));
  EXPECT_TRUE(std::isnan(pa.straggler.costliest_share));
  EXPECT_EQ(pa.straggler.costliest_rank, pa.straggler.rank);
}

}  // namespace
}  // namespace tpb
