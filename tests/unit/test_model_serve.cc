// serve on virtual ranks (harness/drive/model/virtual_serve.cc): a step's duration is the
// modelled group's by hand count, the per-step splits are step_breakdown's over the same
// timelines (one analysis), a thinned timeline keeps a consistent subset of whole steps moved
// together, and the same spec gives the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/errors.h"
#include "collectives/model/fabric.h"
#include "harness/analysis/step_breakdown.h"
#include "harness/config/serve_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "harness/drive/model/virtual_serve.h"
#include "harness/drive/serve/serve_point.h"

namespace tpb {
namespace {

// A two-rank TP group of virtual ranks (tiny, bf16, h100-sxm at its datasheet roofline, so
// the GEMMs at 2048 tokens are FLOP-bound), with `extra` over the defaults.
nlohmann::json group_config(const nlohmann::json& extra) {
  nlohmann::json cfg = {{"backend", "model"},
                        {"collective", "model"},
                        {"world", 2},
                        {"tp", 2},
                        {"model", "tiny"},
                        {"dtype", "bf16"},
                        {"hardware", "h100-sxm:datasheet"}};
  for (auto& [k, v] : extra.items()) cfg[k] = v;
  return cfg;
}

ServeSpec spec_of(nlohmann::json extra) {
  nlohmann::json load = {{"topology", "nvlink4"},
                         {"concurrency", {4}},
                         {"requests", 12},
                         {"prompt_len", "48"},
                         {"output_len", "uniform:4..20"},
                         {"host_overhead", 150.0},
                         {"seed", 3}};
  for (auto& [k, v] : extra.items()) load[k] = v;
  return resolve_serve_spec(group_config(load), 1, TPB_SOURCE_DIR "/configs");
}

struct Served {
  ServeSpec spec;
  Fabric fabric;
  Peaks peaks;
  ServeRun run;
};

Served serve_once(nlohmann::json extra, std::size_t max_segments = kModelServeSegments) {
  Served r{spec_of(std::move(extra)), {}, {}, {}};
  r.fabric = load_fabric(r.spec.run.topology, r.spec.run.config_dir);
  r.peaks = model_peaks(r.spec.run);
  ServeResult res = run_model_serve_point(r.spec, 0, r.peaks, r.fabric, max_segments);
  EXPECT_TRUE(res.run.has_value());
  if (res.run) r.run = std::move(*res.run);
  return r;
}

// Each step lasts the host overhead plus layers x (the layer's compute and all-reduces) plus
// its end, priced by step_op_plan on the step's own mixed batch: in lockstep (no inject), no
// rank waits, so the group's step is exactly the sum.
TEST(ModelServe, StepDurationIsTheHandSumOfItsOps) {
  const Served r = serve_once({});
  ASSERT_GT(r.run.steps.size(), 20u);
  const RunSpec& rs = r.spec.run;
  const ModelGroup g{2, 1};
  int prefill = 0;
  for (const ServeStep& s : r.run.steps) {
    const Phase ph = s.plan.prefill_tokens > 0 ? Phase::prefill : Phase::decode;
    prefill += ph == Phase::prefill;
    const StepOpPlan ops =
        step_op_plan(rs, s.cost, ph, s.plan.batch.tokens(), r.peaks, r.fabric, g);
    double layer = 0, tail = 0;
    for (const PricedOp& o : ops.layer) layer += o.s;
    for (const PricedOp& o : ops.tail) tail += o.s;
    EXPECT_EQ(ops.tail.size(), 4u);  // final_norm, lm_head, sample, sample_gather
    const double want = 150e-6 + static_cast<double>(r.run.layers) * layer + tail;
    EXPECT_NEAR(s.duration_s, want, 1e-12 * want);
  }
  EXPECT_GT(prefill, 0);
  EXPECT_TRUE(r.run.timeline_steps.empty());  // nothing thinned
  // Steps end on the virtual clock, which the loop advanced by exactly their durations.
  double clock_gaps = 0;
  for (std::size_t i = 1; i < r.run.steps.size(); ++i)
    clock_gaps += r.run.steps[i].end_s - r.run.steps[i - 1].end_s - r.run.steps[i].duration_s;
  EXPECT_GE(clock_gaps, -1e-9);  // closed loop: idle gaps only where nothing could run
}

// The loop's per-step splits and the analysis of the kept timelines are the same function over
// the same segments: step_breakdown on the whole run reproduces every split.
TEST(ModelServe, SplitsAreStepBreakdownOfTheTimelines) {
  const Served r = serve_once({{"inject", {"rank=1:slowdown=1.3"}}});
  const std::vector<StepSplit> again = step_breakdown(r.run.traces);
  ASSERT_EQ(again.size(), r.run.splits.size());
  for (std::size_t i = 0; i < again.size(); ++i) {
    ASSERT_EQ(again[i].step, r.run.splits[i].step);
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_NEAR(again[i].ranks[k].compute_s, r.run.splits[i].ranks[k].compute_s, 1e-12);
      EXPECT_NEAR(again[i].ranks[k].wait_s, r.run.splits[i].ranks[k].wait_s, 1e-12);
      EXPECT_NEAR(again[i].ranks[k].transfer_s, r.run.splits[i].ranks[k].transfer_s, 1e-12);
    }
    // Rank 0 waits for the slowed rank 1 at every collective: 0.3 of rank 0's compute.
    EXPECT_NEAR(r.run.splits[i].ranks[0].wait_s, 0.3 * r.run.splits[i].ranks[0].compute_s,
                1e-9 * r.run.splits[i].ranks[0].compute_s);
    EXPECT_NEAR(r.run.splits[i].ranks[1].wait_s, 0, 1e-12);
  }
}

// Under a small budget the timeline keeps a subset of whole steps, the same on both ranks and
// the one the run names, moved together with their own host gaps; splits, steps and request
// logs are those of the unthinned run.
TEST(ModelServe, AThinnedTimelineKeepsWholeStepsBackToBack) {
  const Served full = serve_once({});
  const Served thin = serve_once({}, 5000);
  ASSERT_FALSE(thin.run.timeline_steps.empty());
  EXPECT_LT(thin.run.timeline_steps.size(), full.run.steps.size() / 2);
  ASSERT_EQ(thin.run.steps.size(), full.run.steps.size());
  for (std::size_t i = 0; i < full.run.steps.size(); ++i) {
    EXPECT_EQ(thin.run.steps[i].duration_s, full.run.steps[i].duration_s);
    EXPECT_EQ(thin.run.splits[i].ranks[0].compute_s, full.run.splits[i].ranks[0].compute_s);
  }
  const std::set<int> kept(thin.run.timeline_steps.begin(), thin.run.timeline_steps.end());
  double busy = 0;
  for (int s : kept) busy += thin.run.steps[static_cast<std::size_t>(s)].duration_s;
  for (const RankTrace& t : thin.run.traces) {
    std::set<int> seen;
    double last = 0;
    for (const SegmentRecord& g : t.segs) {
      seen.insert(g.step);
      last = std::max(last, g.t1);
    }
    EXPECT_EQ(seen, kept);
    // The last kept step ends when the kept steps' durations, back to back, are spent.
    EXPECT_NEAR(last, busy, 1e-9 * busy);
  }
}

TEST(ModelServe, TheSameSpecGivesTheSameRun) {
  const Served a = serve_once({{"model_noise", "7:0.05"}});
  const Served b = serve_once({{"model_noise", "7:0.05"}});
  ASSERT_EQ(a.run.steps.size(), b.run.steps.size());
  for (std::size_t i = 0; i < a.run.steps.size(); ++i)
    EXPECT_EQ(a.run.steps[i].duration_s, b.run.steps[i].duration_s);
  ASSERT_EQ(a.run.requests.size(), b.run.requests.size());
  for (std::size_t i = 0; i < a.run.requests.size(); ++i)
    EXPECT_EQ(a.run.requests[i].token_s, b.run.requests[i].token_s);
}

// A KV budget the load cannot fit preempts; a budget below one prompt is an oom point.
TEST(ModelServe, KvBudgetPreemptsAndMemoryBudgetIsOom) {
  const Served tight = serve_once({{"kv_budget", 96}, {"output_len", "40"}});
  EXPECT_GT(tight.run.preemptions, 0);
  const ServeSpec s = spec_of({{"memory_budget", "1MiB"}});
  const Fabric f = load_fabric(s.run.topology, s.run.config_dir);
  const ServeResult res = run_model_serve_point(s, 0, model_peaks(s.run), f);
  ASSERT_TRUE(res.oom.has_value());
  EXPECT_EQ(res.oom->status, PointStatus::oom);
}

// A request longer than the KV cache can ever hold is rejected at arrival and left out of the
// metrics: the point says how many; with none completed it measured nothing and is skipped
// (it was an ok point with null metrics, a NaN p95 ITL the curve counted as free).
TEST(ModelServe, RejectedRequestsAreSaidAndAllRejectedIsSkipped) {
  const Served some =
      serve_once({{"kv_budget", 96}, {"prompt_len", "mix:48@0.5,400@0.5"}, {"output_len", "8"}});
  const ServePoint p = build_serve_point(some.spec, 0, some.run, some.peaks, DeviceCaps{}, 0, "");
  ASSERT_EQ(p.record.status, PointStatus::ok);
  ASSERT_TRUE(p.record.serve && p.record.warnings);
  ASSERT_GT(p.record.serve->requests_rejected, 0);
  ASSERT_GT(p.record.serve->requests_completed, 0);
  const auto& w = *p.record.warnings;
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](const std::string& s) {
    return s.rfind("requests_rejected: ", 0) == 0 && s.find("exceeds the KV cache") != s.npos;
  }));

  const Served none = serve_once({{"kv_budget", 96}, {"prompt_len", "400"}, {"output_len", "8"}});
  const ServePoint q = build_serve_point(none.spec, 0, none.run, none.peaks, DeviceCaps{}, 0, "");
  EXPECT_EQ(q.record.status, PointStatus::skipped);
  EXPECT_EQ(q.record.reason.rfind("no measured request completed: 12 of 12", 0), 0u)
      << q.record.reason;
  EXPECT_FALSE(q.record.metrics);
  ASSERT_TRUE(q.record.serve);
  EXPECT_EQ(q.record.serve->requests_rejected, 12);
  EXPECT_EQ(q.curve.status, "skipped");
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

RunSpec model_spec(const nlohmann::json& extra) {
  return resolve_run_spec(group_config(extra), 1, TPB_SOURCE_DIR "/configs");
}

// One prefill-2048 step of a 1-layer group whose rank 1 takes `inject`: the plan and traces.
struct InjectedStep {
  RunSpec spec;
  Fabric fabric;
  StepOpPlan plan;
  std::vector<RankTrace> traces;
};

InjectedStep injected_step(const std::string& inject) {
  InjectedStep r{
      model_spec(
          {{"phase", "prefill"}, {"prompt", 2048}, {"steps", 1}, {"inject", {"rank=1:" + inject}}}),
      {},
      {},
      {}};
  r.fabric = load_fabric(r.spec.topology, r.spec.config_dir);
  CostQuery q = r.spec.cost_query();
  r.plan =
      step_op_plan(r.spec, step_cost(q), q.phase, q.prompt, model_peaks(r.spec), r.fabric, {2, 1});
  const std::vector<int> members{0, 1};
  VirtualGroup g(r.spec, members);
  g.step(0, 1, r.plan);
  r.traces = g.take_traces();
  return r;
}

// Each compute op of the layer: rank 1 takes want(op), rank 0 the op's own time.
template <class Want>
void expect_op_times(const InjectedStep& r, Want want) {
  const std::vector<RankTrace>& t = r.traces;
  std::size_t i = 0;
  for (const PricedOp& p : r.plan.layer) {
    while (t[1].segs[i].op != p.op) ++i;  // past the injected and step records
    if (op_is_collective(p.op)) continue;
    const double w = want(p);
    EXPECT_NEAR(t[1].segs[i].t1 - t[1].segs[i].t0, w, 1e-15 + 1e-12 * w) << op_name(p.op);
    EXPECT_NEAR(t[0].segs[i].t1 - t[0].segs[i].t0, p.s, 1e-15 + 1e-12 * p.s) << op_name(p.op);
  }
}

int count_ops(const StepOpPlan& plan, bool (*pick)(const PricedOp&)) {
  int n = 0;
  for (const PricedOp& p : plan.layer) n += !op_is_collective(p.op) && pick(p);
  return n;
}

// --inject sm_clock on a virtual rank: its FLOP-bound time scales by the profile's clock over
// the locked one, its bandwidth-bound time does not (the memory clock is its own).
TEST(ModelInject, SmClockStretchesTheFlopSideOnly) {
  const InjectedStep r = injected_step("sm_clock=915");
  expect_op_times(r, [](const PricedOp& p) { return std::max(2.0 * p.flop_s, p.byte_s); });
  // The GEMMs at 2048 tokens, then the elementwise ops.
  EXPECT_GT(count_ops(r.plan, [](const PricedOp& p) { return p.flop_s > p.byte_s; }), 0);
  EXPECT_GT(count_ops(r.plan, [](const PricedOp& p) { return p.flop_s < p.byte_s; }), 0);
}

// sm_clock=emulate@F on a virtual rank: 1 - F of the SMs left, so the FLOP side takes
// 1 / (1 - F) as long (F = 0.5: twice, as sm_clock=915 at the profile's 1830 above).
TEST(ModelInject, SmClockEmulationStretchesTheFlopSideAlike) {
  const InjectedStep r = injected_step("sm_clock=emulate@0.5");
  expect_op_times(r, [](const PricedOp& p) { return std::max(2.0 * p.flop_s, p.byte_s); });
}

RunSpec hang_spec(int world, int tp) {
  return model_spec({{"world", world},
                     {"tp", tp},
                     {"batch", 4},
                     {"steps", 6},
                     {"collective_timeout", 4},
                     {"inject", {"rank=1:hang_at_step=2"}}});
}

// --inject hang_at_step on a virtual rank: its peer's first all-reduce of that step ends the
// job with the board's own wording (collectives/progress_text.h), at exit code 3; the steps
// before it ran whole on both ranks.
TEST(ModelInject, HangAtStepEndsTheGroupAtItsNextCollective) {
  const RunSpec spec = hang_spec(2, 2);
  const Fabric f = load_fabric(spec.topology, spec.config_dir);
  CostQuery q = spec.cost_query();
  const StepOpPlan plan =
      step_op_plan(spec, step_cost(q), q.phase, q.batch, model_peaks(spec), f, {2, 1});
  const std::vector<int> members{0, 1};
  VirtualGroup g(spec, members);
  g.step(0, 2, plan);
  g.step(1, 2, plan);
  const int32_t attn = static_cast<int32_t>(Op::allreduce_attn);
  const int32_t mlp = static_cast<int32_t>(Op::allreduce_mlp);
  try {
    g.step(2, 2, plan);
    FAIL() << "the step a rank hangs at must not complete";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::collective_timeout);
    const std::string msg = e.what();
    // Rank 0 entered the 5th all-reduce (seq 5); rank 1 last left the 4th, step 1's last.
    EXPECT_NE(msg.find(waited_clause(0, {5, 2, 0, attn, 1})), std::string::npos) << msg;
    EXPECT_NE(msg.find("never arrived: " + missing_entry(1, {4, 1, 1, mlp, 0})), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("did not complete within 4 s"), std::string::npos) << msg;
  }
  EXPECT_TRUE(g.unnoticed_hangs().empty());
}

// A group of one has nobody inside it to wait: the steps go on without the stopped rank (no
// segment of it after the hang) and the group hands the hang on to the world's check.
TEST(ModelInject, AGroupOfOneLeavesItsHangToTheWorld) {
  const RunSpec spec = hang_spec(2, 1);
  const Fabric f = load_fabric(spec.topology, spec.config_dir);
  CostQuery q = spec.cost_query();
  const StepOpPlan plan =
      step_op_plan(spec, step_cost(q), q.phase, q.batch, model_peaks(spec), f, {1, 1});
  const std::vector<int> members{1};
  VirtualGroup g(spec, members);
  for (int s = 0; s < 6; ++s) g.step(s, 2, plan);
  ASSERT_EQ(g.unnoticed_hangs().size(), 1u);
  EXPECT_EQ(g.unnoticed_hangs()[0].rank, 1);
  EXPECT_EQ(g.unnoticed_hangs()[0].step, 2);
  int last = -1;
  const std::vector<RankTrace> traces = g.take_traces();
  for (const SegmentRecord& r : traces[0].segs) last = std::max(last, r.step);
  EXPECT_EQ(last, 1);
}

// --inject mem_contend on a virtual rank: a hog taking an equal share of its memory bandwidth,
// so its byte-bound time doubles and its FLOP-bound time does not; results say it is assumed.
TEST(ModelInject, MemContendDoublesTheByteSideOnly) {
  const InjectedStep r = injected_step("mem_contend=1");
  expect_op_times(r, [](const PricedOp& p) { return std::max(p.flop_s, kHogShare * p.byte_s); });
  // The elementwise ops: 2x; the GEMMs at 2048 tokens: unchanged.
  EXPECT_GT(count_ops(r.plan, [](const PricedOp& p) { return p.byte_s > p.flop_s; }), 0);
  EXPECT_GT(count_ops(r.plan, [](const PricedOp& p) { return p.flop_s > kHogShare * p.byte_s; }),
            0);
  const auto w = model_device_caps(r.spec, r.fabric).warnings;
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](const std::string& s) {
    return s.rfind("mem_contend_modelled", 0) == 0;
  }));
}

}  // namespace
}  // namespace tpb
