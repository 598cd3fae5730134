// A straggler is named only where its lead exceeds the clock uncertainty: each rank's offset
// and device stamp conversion errors combine into the skew's uncertainty (analysis.h), and a
// last arrival inside it is no arrival order (times in ms unless stated).
#include <gtest/gtest.h>

#include <string>

#include "harness/analysis/analysis.h"
#include "harness/report/diagnose.h"
#include "tests/support/segment_ms.h"

namespace tpb {
namespace {

using test::add;
using test::kMs;
constexpr double kUs = 1e-6;

// Two ranks of one TP group, 6 steps of 10 ms: rank 0 enters the all-reduce at 5 ms, rank 1
// `late_us` later; both exit at 8 ms. Each rank's stamps are uncertain by `u_us` (4.9 us: half
// the H200's one calibration bracket), so their pair by 9.8 us.
AnalysisInput two_ranks(double late_us, double u_us) {
  AnalysisInput in;
  for (int r = 0; r < 2; ++r) {
    RankTrace t;
    t.rank = r, t.group = 0, t.group_rank = r;
    t.clock_uncertainty_s = u_us * kUs;
    const double enter = 5 + (r == 1 ? late_us * 1e-3 : 0);
    for (int k = 0; k < 6; ++k) {
      add(t, k, Op::step, 10.0 * k, 10.0 * k + 10);
      add(t, k, Op::qkv_proj, 10.0 * k, 10.0 * k + enter);
      add(t, k, Op::allreduce_attn, 10.0 * k + enter, 10.0 * k + 8);
    }
    in.ranks.push_back(std::move(t));
  }
  in.tokens_per_step = 1;
  return in;
}

TEST(StragglerClock, LeadInsideTheUncertaintyNamesNoOne) {
  // Rank 1 enters 4 us late every time: within 2 x 4.9 = 9.8 us, so it may only be converted
  // late. No arrival is counted, no wait is charged, and no rank is named.
  const PointAnalysis pa = analyze(two_ranks(4, 4.9));
  EXPECT_NEAR(pa.collectives.skew_uncertainty_s, 9.8 * kUs, 1e-15);
  EXPECT_EQ(pa.collectives.unresolved_arrivals, 6);
  EXPECT_EQ(pa.ranks[1].arrived_last, 0);
  EXPECT_EQ(pa.ranks[1].caused_wait_s, 0);
  EXPECT_EQ(pa.straggler.rank, -1);
  EXPECT_TRUE(pa.straggler.within_uncertainty);
  EXPECT_EQ(pa.straggler.costliest_rank, -1);
  // straggler_cause still looks at the busiest rank (5.004 ms of compute a step against 5).
  EXPECT_EQ(pa.straggler.busiest_rank, 1);
  // The skew is still measured as it is: 4 us, against 9.8 us of uncertainty.
  EXPECT_NEAR(pa.collectives.skew.p50, 4 * kUs, 1e-12);
}

TEST(StragglerClock, LeadOutsideTheUncertaintyIsNamed) {
  // 30 us late every time, beyond 9.8 us: rank 1 is the straggler with a 30 us median lead.
  const PointAnalysis pa = analyze(two_ranks(30, 4.9));
  EXPECT_EQ(pa.collectives.unresolved_arrivals, 0);
  EXPECT_EQ(pa.ranks[1].arrived_last, 6);
  EXPECT_EQ(pa.straggler.rank, 1);
  EXPECT_FALSE(pa.straggler.within_uncertainty);
  EXPECT_NEAR(pa.straggler.lead_s, 30 * kUs, 1e-12);
  EXPECT_NEAR(pa.straggler.arrived_last_share, 1.0, 1e-12);
  // Rank 0 waited 30 us in each of the 6 instances, all charged to rank 1.
  EXPECT_NEAR(pa.ranks[1].caused_wait_s, 6 * 30 * kUs, 1e-12);
}

TEST(StragglerClock, TheUncertaintyIsTheLeastCertainPair) {
  // Host stamps (the CPU backend): only the ping-pong's 0.3 us each, 0.6 us the pair; a 4 us
  // lead is then outside it and rank 1 is named, as before the device term existed.
  const PointAnalysis host = analyze(two_ranks(4, 0.3));
  EXPECT_NEAR(host.collectives.skew_uncertainty_s, 0.6 * kUs, 1e-15);
  EXPECT_EQ(host.straggler.rank, 1);
  // One uncertain rank of two: 0.3 + 4.9 = 5.2 us > 4 us, so nobody.
  AnalysisInput in = two_ranks(4, 0.3);
  in.ranks[1].clock_uncertainty_s = 4.9 * kUs;
  EXPECT_EQ(analyze(in).straggler.rank, -1);
}

// diagnose says why nobody is named, with the uncertainty, and never calls it a straggler.
TEST(StragglerClock, DiagnoseSaysTheLeadIsWithinTheClockUncertainty) {
  PointRecord p;
  p.status = PointStatus::ok;
  p.params.phase = "decode";
  p.metrics.emplace();
  p.collectives.emplace();
  p.collectives->count = 6;
  p.collectives->wait_fraction = 0.3;
  p.collectives->skew_s.p50 = 4 * kUs;
  p.collectives->skew_uncertainty_s = 9.8 * kUs;
  p.straggler.emplace();
  p.straggler->reason = "within clock uncertainty (±9.8 us): no rank's last arrivals lead";
  p.straggler->excess_compute_fraction = 0.2;
  RankRecord r;
  r.wall_s = 1, r.wait_s = 0.3;
  p.ranks = std::vector<RankRecord>{r, r};
  std::string text;
  for (const Verdict& v : diagnose_point(p)) {
    if (v.topic != "balance") continue;
    text = v.text;
    EXPECT_FALSE(v.code && *v.code == "straggler") << text;
  }
  EXPECT_NE(text.find("no rank is named a straggler: within clock uncertainty (±9.8 us)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("p50 4.0 us within the clock uncertainty ±9.8 us"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace tpb
