// The serve driver's pure parts: the per-step split of a timeline, the late-token attribution,
// the serve options' checks, and the serve records' round trip through JSON.
#include <gtest/gtest.h>

#include <cmath>

#include "base/errors.h"
#include "harness/analysis/itl_attribution.h"
#include "harness/analysis/step_breakdown.h"
#include "harness/config/serve_spec.h"
#include "harness/record/json/results_json.h"

namespace tpb {
namespace {

SegmentRecord seg(int step, Op op, double t0, double t1) {
  SegmentRecord s;
  s.step = step;
  s.op = op;
  s.t0 = t0;
  s.t1 = t1;
  s.collective = op_is_collective(op) ? 1 : 0;
  return s;
}

// Two ranks, one step: rank 1 computes 3 ms longer, so rank 0 waits 3 ms at the all-reduce
// (enters at 2 ms, the last enter is at 5 ms) and both then transfer 1 ms.
TEST(ServeParts, StepBreakdownSplitsComputeWaitTransfer) {
  RankTrace r0, r1;
  r0.rank = 0;
  r1.rank = 1;
  r0.segs = {seg(0, Op::step, 0, 0.007), seg(0, Op::qkv_proj, 0, 0.002),
             seg(0, Op::allreduce_attn, 0.002, 0.006), seg(0, Op::residual_attn, 0.006, 0.007),
             seg(-1, Op::qkv_proj, -1, -0.5)};
  r1.segs = {seg(0, Op::step, 0, 0.007), seg(0, Op::qkv_proj, 0, 0.005),
             seg(0, Op::allreduce_attn, 0.005, 0.006), seg(0, Op::residual_attn, 0.006, 0.007)};
  const auto s = step_breakdown({r0, r1});
  ASSERT_EQ(s.size(), 1u);  // the warm-up segment (step -1) is left out
  EXPECT_NEAR(s[0].ranks[0].compute_s, 0.003, 1e-12);
  EXPECT_NEAR(s[0].ranks[0].wait_s, 0.003, 1e-12);
  EXPECT_NEAR(s[0].ranks[0].transfer_s, 0.001, 1e-12);
  EXPECT_NEAR(s[0].ranks[1].wait_s, 0.0, 1e-12);
  EXPECT_NEAR(s[0].ranks[1].transfer_s, 0.001, 1e-12);
  EXPECT_NEAR(s[0].max_compute_s, 0.006, 1e-12);
  EXPECT_NEAR(s[0].median_compute_s, 0.0045, 1e-12);  // the mean of the two
  EXPECT_NEAR(s[0].lower_median_compute_s, 0.003, 1e-12);
  EXPECT_NEAR(s[0].device_time_s, 0.007, 1e-12);
}

// Rank 1 spends 3 ms on host work at the start of its step, then computes as long as rank 0,
// which waits those 3 ms at the all-reduce: the compute is even, the busy time is not.
TEST(ServeParts, StepBreakdownChargesALateRanksHostWork) {
  RankTrace r0, r1;
  r0.segs = {seg(0, Op::step, 0, 0.0075), seg(0, Op::qkv_proj, 0, 0.002),
             seg(0, Op::allreduce_attn, 0.002, 0.006), seg(0, Op::residual_attn, 0.006, 0.007)};
  r1.segs = {seg(0, Op::step, 0, 0.007), seg(0, Op::qkv_proj, 0.003, 0.005),
             seg(0, Op::allreduce_attn, 0.005, 0.006), seg(0, Op::residual_attn, 0.006, 0.007)};
  const auto s = step_breakdown({r0, r1});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_NEAR(s[0].ranks[0].host_s, 0.0005, 1e-12);  // its step ends 0.5 ms after its last op
  EXPECT_NEAR(s[0].ranks[1].host_s, 0.003, 1e-12);
  EXPECT_NEAR(s[0].max_compute_s - s[0].lower_median_compute_s, 0.0, 1e-12);
  EXPECT_NEAR(s[0].max_busy_s, 0.006, 1e-12);
  EXPECT_NEAR(s[0].lower_median_busy_s, 0.0035, 1e-12);
}

std::vector<ItlGap> request(const std::vector<double>& t, const std::vector<int64_t>& steps) {
  std::vector<ItlGap> g;
  for (std::size_t i = 1; i < t.size(); ++i)
    g.push_back({t[i] - t[i - 1], steps[i], 0, static_cast<int64_t>(i)});
  return g;
}

// One request that gets a token at every step: its gaps are the steps' durations.
std::vector<ItlGap> one_token_per_step(const std::vector<StepParts>& steps) {
  std::vector<double> t{0};
  std::vector<int64_t> at{0};
  for (std::size_t i = 1; i < steps.size(); ++i) {
    t.push_back(t.back() + steps[i].duration_s);
    at.push_back(static_cast<int64_t>(i));
  }
  return request(t, at);
}

// 99 decode steps of 10 ms and one of 50 ms whose excess is all prefill: the tail is prefill.
TEST(ServeParts, AttributionNamesThePrefillSpike) {
  std::vector<StepParts> steps(100);
  for (int i = 0; i < 100; ++i) {
    StepParts& p = steps[i];
    p.decode_s = 0.009;
    p.host_s = 0.001;
    if (i == 50) {
      p.prefill_s = 0.040;
      p.has_prefill = true;
      // Four prompt rows in the batch's order; a chunk of request 7 ties request 9's prompt.
      p.prefill_rows = {{3, 64, 0}, {7, 512, 1024}, {9, 512, 0}, {11, 2048, 0}};
    }
    p.duration_s = p.decode_s + p.host_s + p.prefill_s;
  }
  const ItlAttribution a = attribute_itl(one_token_per_step(steps), steps);
  // The tail is the one 50 ms gap: 40 ms of prefill and 1 ms of host gap, both counted in full
  // (a clean step has neither); its decode compute is at the median, so no bandwidth excess.
  EXPECT_NEAR(a.shares.prefill, 40.0 / 41.0, 1e-9);
  EXPECT_NEAR(a.shares.host, 1.0 / 41.0, 1e-9);
  EXPECT_NEAR(a.shares.bandwidth, 0.0, 1e-12);
  EXPECT_GE(a.samples, 1);
  EXPECT_NEAR(a.prefill_step_p50_s, 0.050, 1e-12);
  EXPECT_NEAR(a.decode_step_p50_s, 0.010, 1e-12);
  // The late token itself: the 50 ms gap, its step, and prefill as its largest part.
  ASSERT_EQ(a.worst.size(), kWorstGaps);
  EXPECT_EQ(a.worst[0].step, 50);
  EXPECT_EQ(a.worst[0].token, 50);
  EXPECT_EQ(a.worst[0].tokens, 1);
  EXPECT_NEAR(a.worst[0].gap_s, 0.050, 1e-12);
  EXPECT_EQ(a.worst[0].part, "prefill");
  EXPECT_NEAR(a.worst[0].part_s, 0.040, 1e-12);
  EXPECT_EQ(a.worst[0].rank, -1);
  // Every part of it: 40 ms of prefill, 1 ms of host, nothing else; its step spans the gap.
  EXPECT_NEAR(a.worst[0].parts_s.prefill, 0.040, 1e-12);
  EXPECT_NEAR(a.worst[0].parts_s.host, 0.001, 1e-12);
  EXPECT_NEAR(a.worst[0].parts_s.transfer + a.worst[0].parts_s.bandwidth +
                  a.worst[0].parts_s.jitter + a.worst[0].parts_s.imbalance,
              0.0, 1e-12);
  EXPECT_NEAR(a.worst[0].between_steps_s, 0.0, 1e-12);
  // Its prompts, the largest three first, the batch's order between equals; all four counted.
  EXPECT_EQ(a.worst[0].prefill_requests, 4);
  ASSERT_EQ(a.worst[0].prefilled.size(), kPrefilledNamed);
  EXPECT_EQ(a.worst[0].prefilled[0].request, 11);
  EXPECT_EQ(a.worst[0].prefilled[1].request, 7);
  EXPECT_EQ(a.worst[0].prefilled[1].cached, 1024);
  EXPECT_EQ(a.worst[0].prefilled[2].request, 9);
  // A decode step's gap names no prompt.
  EXPECT_EQ(a.worst[1].prefill_requests, 0);
  EXPECT_TRUE(a.worst[1].prefilled.empty());
}

// Two requests decode side by side; step 30 is 4 ms late on rank 5 (imbalance) and request 1
// sits out steps 60..69 (preempted): its gap at step 70 is the longest and spans other steps.
TEST(ServeParts, TheWorstGapsAreNamedOneByOne) {
  std::vector<StepParts> steps(100);
  for (int i = 0; i < 100; ++i) {
    steps[i].decode_s = 0.010;
    steps[i].duration_s = 0.010;
  }
  steps[30].imbalance_s = 0.004;
  steps[30].duration_s = 0.014;
  steps[30].late_rank = 5;
  std::vector<ItlGap> g;
  double t[2] = {0, 0}, clock = 0;
  int64_t last[2] = {0, 0};
  for (int i = 0; i < 100; ++i) {
    clock += steps[i].duration_s;
    for (int r = 0; r < 2; ++r) {
      if (r == 1 && i >= 60 && i < 70) continue;
      if (i > 0) g.push_back({clock - t[r], i, r, i, last[r], r == 1 ? 1 : 0});
      t[r] = clock;
      last[r] = i;
    }
  }
  const ItlAttribution a = attribute_itl(g, steps);
  ASSERT_GE(a.worst.size(), 2u);
  EXPECT_EQ(a.worst[0].request, 1);
  EXPECT_EQ(a.worst[0].step, 70);
  EXPECT_EQ(a.worst[0].part, "between_steps");
  EXPECT_NEAR(a.worst[0].part_s, 0.100, 1e-9);  // steps 60..69 it sat out
  EXPECT_NEAR(a.worst[0].between_steps_s, 0.100, 1e-9);
  EXPECT_EQ(a.worst[0].skipped_steps, 10);
  EXPECT_EQ(a.worst[0].preemptions, 1);
  // Step 30 once, not once per request, with both its tokens counted; rank 5 named.
  EXPECT_EQ(a.worst[1].step, 30);
  EXPECT_EQ(a.worst[1].tokens, 2);
  EXPECT_EQ(a.worst[1].part, "imbalance");
  EXPECT_NEAR(a.worst[1].part_s, 0.004, 1e-12);
  EXPECT_EQ(a.worst[1].rank, 5);
  for (std::size_t k = 1; k < a.worst.size(); ++k) EXPECT_NE(a.worst[k].step, a.worst[k - 1].step);
}

// Decode steps of 10 ms with 1 ms of transfer; step 50 prefills a long prompt beside them, its
// 90% of the step's tokens making its all-reduce 41 ms: the 40 ms excess is 36 ms the prompt's
// payload and 4 ms the decode rows' (the link's).
TEST(ServeParts, APromptsAllReducePayloadIsPrefill) {
  std::vector<StepParts> steps(100);
  for (int i = 0; i < 100; ++i) {
    StepParts& p = steps[i];
    p.decode_s = 0.009;
    p.transfer_s = i == 50 ? 0.041 : 0.001;
    if (i == 50) p.has_prefill = true, p.prompt_token_share = 0.9;
    p.duration_s = p.decode_s + p.transfer_s;
  }
  const ItlAttribution a = attribute_itl(one_token_per_step(steps), steps);
  EXPECT_NEAR(a.excess_s, 0.040, 1e-12);
  EXPECT_NEAR(a.shares.prefill, 0.9, 1e-9);
  EXPECT_NEAR(a.shares.transfer, 0.1, 1e-9);
  ASSERT_FALSE(a.worst.empty());
  EXPECT_EQ(a.worst[0].part, "prefill");
  EXPECT_NEAR(a.worst[0].parts_s.prefill, 0.036, 1e-12);
  EXPECT_NEAR(a.worst[0].parts_s.transfer, 0.004, 1e-12);
}

// Decode steps of 10 ms over 1 ms of roofline time, and one late step of 40 ms. When its work
// is the same (1 ms of roofline time), the 30 ms excess is jitter; when it carries 4x the work
// (more rows, longer contexts), that work explains the whole excess and it is bandwidth.
ItlAttribution late_decode_step(double late_roofline_s) {
  std::vector<StepParts> steps(100);
  for (int i = 0; i < 100; ++i) {
    StepParts& p = steps[i];
    p.decode_s = i == 50 ? 0.040 : 0.010;
    p.decode_roofline_s = i == 50 ? late_roofline_s : 0.001;
    p.duration_s = p.decode_s;
  }
  return attribute_itl(one_token_per_step(steps), steps);
}

TEST(ServeParts, AttributionSplitsDecodeExcessByItsWork) {
  const ItlAttribution same = late_decode_step(0.001);
  EXPECT_NEAR(same.shares.jitter, 1.0, 1e-9);
  EXPECT_NEAR(same.shares.bandwidth, 0.0, 1e-12);
  EXPECT_NEAR(same.excess_s, 0.030, 1e-12);
  const ItlAttribution more = late_decode_step(0.004);
  EXPECT_NEAR(more.shares.bandwidth, 1.0, 1e-9);
  EXPECT_NEAR(more.shares.jitter, 0.0, 1e-12);
  // Twice the work explains 10 of the 30 ms: a third bandwidth, two thirds jitter.
  const ItlAttribution twice = late_decode_step(0.002);
  EXPECT_NEAR(twice.shares.bandwidth, 1.0 / 3, 1e-9);
  EXPECT_NEAR(twice.shares.jitter, 2.0 / 3, 1e-9);
  // Without roofline times the work cannot be judged: the excess stays bandwidth.
  const ItlAttribution unknown = late_decode_step(0);
  EXPECT_NEAR(unknown.shares.bandwidth, 1.0, 1e-9);
}

TEST(ServeParts, AttributionOfNoGapsIsNull) {
  const ItlAttribution a = attribute_itl(request({1.0}, {0}), {StepParts{}});
  EXPECT_TRUE(std::isnan(a.threshold_s));
  EXPECT_TRUE(std::isnan(a.shares.prefill));
}

void expect_bad(const nlohmann::json& cfg, const std::string& field) {
  try {
    resolve_serve_spec(cfg, 2, TPB_SOURCE_DIR "/configs");
    ADD_FAILURE() << "accepted " << cfg.dump();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(ServeParts, SpecRefusesWhatServingDecides) {
  expect_bad({{"batch", "8"}}, "--batch");
  expect_bad({{"phase", "decode"}}, "--phase");
  expect_bad({{"steps", "5"}}, "--steps");
  expect_bad({{"rate", "0"}}, "--rate");
  expect_bad({{"concurrency", "-1"}}, "--concurrency");
  expect_bad({{"concurrency", "2.5"}}, "--concurrency");
  expect_bad({{"rate", "1"}, {"concurrency", "2"}}, "--rate");
  expect_bad({{"chunk", "0"}}, "--chunk");
  expect_bad({{"scheduler", "fifo"}}, "--scheduler");
  expect_bad({{"prompt_len", "gauss:3"}}, "--prompt-len");
  expect_bad({{"slo", "latency=3"}}, "--slo");
  expect_bad({{"tp", "1"}}, "--tp");
  expect_bad({{"scheduler", "static"}, {"chunk", "64"}}, "--chunk");
}

TEST(ServeParts, SpecReadsLoadsAndDefaults) {
  const ServeSpec s = resolve_serve_spec({{"concurrency", "1..8:x2"}, {"prompt_len", "64"}}, 2,
                                         TPB_SOURCE_DIR "/configs");
  EXPECT_EQ(s.axis, "concurrency");
  EXPECT_EQ(s.loads, (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(s.load_at(2).concurrency, 4);
  EXPECT_EQ(s.scheduler_at(2).max_running, 4);
  EXPECT_EQ(s.run.warmup, 2);
  const ServeSpec r = resolve_serve_spec({{"rate", "0.5,2"}}, 2, TPB_SOURCE_DIR "/configs");
  EXPECT_EQ(r.axis, "rate");
  EXPECT_DOUBLE_EQ(r.load_at(0).rate, 0.5);
  EXPECT_EQ(r.load_at(0).concurrency, 0);
}

TEST(ServeParts, ServeRecordsRoundTrip) {
  PointRecord p;
  p.params.phase = "serve";
  ServeParamsRecord sp;
  sp.load = "concurrency";
  sp.x = 8;
  sp.concurrency = 8;
  p.params.serve = sp;
  MetricsRecord m;
  m.ttft_s = LatencyStats{0.1, 0.09, 0.2, 0.25, 0.3, 0.4, 64};
  m.itl_s = LatencyStats{
      std::nan(""), std::nan(""), std::nan(""), std::nan(""), std::nan(""), std::nan(""), 0};
  m.output_tokens_per_s = 123.5;
  m.itl_attribution =
      ItlAttributionRecord{"p99", 0.05, 3, 0.1, {0.5, 0.2, 0.1, 0.1, 0.1}, 0.01, 0.05, "m"};
  LateTokenRecord late{4, 9, 81, 3, 0.14, "prefill", 0.11, std::nullopt};
  late.parts_s = GapPartsRecord{0.11, 0, 0.001, 0.02, 0, 0.003, 0};
  late.prefilled = std::vector<PrefillRowRecord>{{15, 61, 152}};
  late.prefill_requests = 1;
  LateTokenRecord old_late{5, 2, 7, 1, 0.02, "jitter", 0.01, std::nullopt};  // before 1.22.0
  m.itl_attribution->worst = std::vector<LateTokenRecord>{late, old_late};
  p.metrics = m;
  p.serve = ServeRunRecord{};
  p.serve->steps = 10;
  const auto j = to_json(p);
  // NaN is written as null; dumps compare where NaN != NaN would not.
  EXPECT_NE(j.dump().find("\"p50\":null"), std::string::npos);
  EXPECT_EQ(to_json(point_from_json(j)).dump(), j.dump());
  const auto& worst = j["metrics"]["itl_attribution"]["worst"];
  EXPECT_EQ(worst[0]["prefilled"][0]["cached"], 152);
  EXPECT_EQ(worst[0]["parts_s"]["transfer"], 0.02);
  EXPECT_FALSE(worst[1].contains("parts_s"));  // an older file's entry stays without them
  StepLogRecord s;
  s.ranks = {{0, 0.1, 0.2, 0.3}};
  EXPECT_EQ(to_json(step_log_from_json(to_json(s))), to_json(s));
  CurveRecord c;
  c.x = "concurrency";
  c.points = {{1, 10, 0.01, 0.1, "ok"}};
  EXPECT_TRUE(to_json(c)["memory_wall"].is_null());
  EXPECT_EQ(to_json(curve_from_json(to_json(c))), to_json(c));
}

}  // namespace
}  // namespace tpb
