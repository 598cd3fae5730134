// tpbench whatif on a serve point, against an independent truth: a run made on the virtual clock
// with a known step-time law (written here, not the fit's terms), logged as the harness logs
// it, then replayed as a fix; the truth is the same law run under the fixed config. With a law
// the fit can express and no noise, the replay must give the truth back.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "harness/record/whatif/serve_whatif.h"
#include "harness/record/whatif/step_fit.h"
#include "harness/serve/scheduler.h"
#include "harness/serve/serve_metrics.h"
#include "harness/serve/simulate.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using oj = nlohmann::ordered_json;

// The law, roofline-shaped: the longer of the memory time (4 ms of weights, and 1.5 ms and
// 20 ns per position of context a decoding sequence) and the compute time (3 ms, 60 us a token,
// and `attend` per position a prefilled token attends: its cached prefix and the causal half
// of its chunk).
double law_with(const StepPlan& p, double attend) {
  double mem = 4e-3, compute = 3e-3;
  for (const SeqSlice& s : p.batch.seqs) {
    const double c = double(s.cached), n = double(s.new_tokens);
    compute += 60e-6 * n;
    if (s.new_tokens == 1 && s.cached > 0)
      mem += 1.5e-3 + 20e-9 * (c + 1);
    else
      compute += attend * n * (c + (n + 1) / 2);
  }
  return std::max(mem, compute);
}

// Without prefill attention: a run that prefills every prompt from position 0 cannot tell it
// from the tokens' cost, and the fit does not try (step_fit.h).
double law(const StepPlan& p) {
  return law_with(p, 0);
}

std::vector<Request> requests() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> prompt(32, 400), output(4, 40);
  std::vector<Request> r;
  for (int64_t i = 0; i < 30; ++i) r.push_back({i, 0.0, prompt(rng), output(rng)});
  return r;
}

SchedulerConfig config(int64_t chunk, int64_t kv_tokens) {
  SchedulerConfig c;
  c.max_running = 4;
  c.concurrency = 4;
  c.chunk = chunk;
  c.max_step_tokens = 8192;
  c.block_tokens = 16;
  c.kv_blocks = kv_tokens / 16;
  c.max_ctx = c.kv_blocks * 16;
  return c;
}

struct SimRun {
  SimResult sim;
  std::vector<RequestLog> logs;
  ServeMetrics m;
};

SimRun simulate_run(const SchedulerConfig& c, double host_s = 0, double attend = 0) {
  Scheduler s(c, requests(), 0);
  SimRun r;
  r.sim = simulate(s, [&](const StepPlan& p) { return law_with(p, attend) + host_s; });
  r.logs = s.logs();
  r.m = serve_metrics(r.logs, {});
  return r;
}

// Two ranks' split of a step of `d` seconds with `host_s` of it between steps: both compute the
// rest, but rank 1 spends `late_s` of it on host work inside the step, which rank 0 waits out.
// A negative late_s writes the split as logs before results 1.21.0 did: no host_s per rank.
oj ranks_of(double d, double host_s, double late_s) {
  if (late_s < 0) return {{{"compute_s", d - host_s}}, {{"compute_s", d - host_s}}};
  const double c = d - host_s - late_s;
  return {{{"compute_s", c}, {"wait_s", late_s}, {"host_s", 0.0}},
          {{"compute_s", c}, {"wait_s", 0.0}, {"host_s", late_s}}};
}

// The run's point and its two logs in `dir`, as the harness writes them (the fields whatif reads).
oj write_point(const SimRun& r, const SchedulerConfig& c, const fs::path& dir, double host_s,
               double late_s = -1) {
  fs::create_directories(dir);
  std::ofstream steps(dir / "steps.jsonl"), reqs(dir / "requests.jsonl");
  double prev = 0;
  for (std::size_t k = 0; k < r.sim.steps.size(); ++k) {
    const double d = r.sim.end_s[k] - prev;
    prev = r.sim.end_s[k];
    const StepPlan& p = r.sim.steps[k];
    steps << oj{{"point", 0},
                {"step", k},
                {"duration_s", d},
                {"device_time_s", d - host_s},
                {"prefill_tokens", p.prefill_tokens},
                {"decode_tokens", p.decode_tokens},
                {"ranks", ranks_of(d, host_s, late_s)}}
                 .dump()
          << "\n";
  }
  for (const RequestLog& l : r.logs)
    reqs << oj{{"point", 0},
               {"id", l.id},
               {"arrival_s", l.arrival_s},
               {"prompt_len", l.prompt_len},
               {"output_len", l.output_len},
               {"warmup", false}}
                .dump()
         << "\n";
  oj p;
  p["status"] = "ok";
  p["params"]["serve"] = {{"scheduler", "continuous"},
                          {"max_batch", c.max_running},
                          {"chunk", c.chunk},
                          {"max_step_tokens", c.max_step_tokens},
                          {"block_tokens", c.block_tokens},
                          {"kv_capacity_tokens", c.kv_blocks * c.block_tokens},
                          {"concurrency", c.concurrency},
                          {"slo", ""}};
  p["serve"] = {{"steps_file", "steps.jsonl"}, {"requests_file", "requests.jsonl"}};
  p["metrics"] = {
      {"output_tokens_per_s", r.m.output_tokens_per_s},
      {"ttft_s", {{"p95", r.m.ttft_s.p95}}},
      {"itl_s", {{"p50", r.m.itl_s.p50}, {"p95", r.m.itl_s.p95}, {"p99", r.m.itl_s.p99}}}};
  return p;
}

const Counterfactual& find(const std::vector<Counterfactual>& cfs, const std::string& name) {
  for (const Counterfactual& c : cfs)
    if (c.name == name) return c;
  throw std::runtime_error("no " + name);
}

void expect_truth(const Counterfactual& c, const ServeMetrics& truth) {
  ASSERT_TRUE(c.figures.tokens_per_s) << c.name << ": " << c.reason;
  EXPECT_NEAR(*c.figures.tokens_per_s / truth.output_tokens_per_s, 1.0, 1e-6) << c.name;
  EXPECT_NEAR(*c.figures.itl_p95_s / truth.itl_s.p95, 1.0, 1e-6) << c.name;
  EXPECT_NEAR(*c.figures.ttft_p95_s / truth.ttft_s.p95, 1.0, 1e-6) << c.name;
  ASSERT_TRUE(c.inputs.fit_error);
  EXPECT_LT(*c.inputs.fit_error, 1e-9) << c.name;
  EXPECT_LT(*c.inputs.replay_error, 1e-9) << c.name;  // the rebuilt run is the run
}

const fs::path kDir = fs::temp_directory_path() / "tpb_serve_whatif";

TEST(ServeWhatif, ChunkedPrefillGivesTheChunkedRunBack) {
  const SchedulerConfig unchunked = config(0, 8192);
  const SimRun measured = simulate_run(unchunked);
  const oj p = write_point(measured, unchunked, kDir / "chunk", 0);
  const auto cfs = serve_counterfactuals(p, 0, (kDir / "chunk").string(), {128, 0});
  const SimRun truth = simulate_run(config(128, 8192));
  expect_truth(find(cfs, "chunked_prefill"), truth.m);
  // Chunking must change the run, or the check above proves nothing.
  EXPECT_GT(std::abs(truth.m.itl_s.p99 / measured.m.itl_s.p99 - 1), 0.05);
}

TEST(ServeWhatif, AChunkedRunFitsPrefillAttentionToo) {
  const SchedulerConfig by128 = config(128, 8192);
  const SimRun measured = simulate_run(by128, 0, 5e-9);
  const oj p = write_point(measured, by128, kDir / "rechunk", 0);
  const auto cfs = serve_counterfactuals(p, 0, (kDir / "rechunk").string(), {384, 0});
  expect_truth(find(cfs, "chunked_prefill"), simulate_run(config(384, 8192), 0, 5e-9).m);
}

TEST(ServeWhatif, BiggerCacheGivesTheUnpreemptedRunBack) {
  const SchedulerConfig small = config(0, 1024);
  const SimRun measured = simulate_run(small);
  Scheduler probe(small, requests(), 0);
  simulate(probe, law);
  ASSERT_GT(probe.preemptions(), 0);  // the small cache really held the run back
  const oj p = write_point(measured, small, kDir / "kv", 0);
  const auto cfs = serve_counterfactuals(p, 0, (kDir / "kv").string(), {0, 0});
  // The default is every running sequence at its longest: 4 x the longest request, in blocks.
  int64_t longest = 0;
  for (const Request& r : requests()) longest = std::max(longest, r.prompt_len + r.output_len);
  const SimRun truth = simulate_run(config(0, 4 * ((longest + 15) / 16) * 16));
  expect_truth(find(cfs, "kv_budget"), truth.m);
}

// Four requests in flight, two at a time: the other two queue. A batch of four (whatif
// --max-batch 4, the default's twice the run's too) must give the run made at four back.
TEST(ServeWhatif, LargerBatchGivesTheUnqueuedRunBack) {
  SchedulerConfig two = config(0, 8192);
  two.max_running = 2;
  const SimRun measured = simulate_run(two);
  const oj p = write_point(measured, two, kDir / "batch", 0);
  const SimRun truth = simulate_run(config(0, 8192));
  for (const int64_t asked : {int64_t{4}, int64_t{0}}) {
    const auto cfs = serve_counterfactuals(p, 0, (kDir / "batch").string(), {0, 0, asked});
    expect_truth(find(cfs, "max_batch"), truth.m);
  }
  // The queue was real: the run at four has a lower TTFT, so the check above can fail.
  EXPECT_LT(truth.m.ttft_s.p95, 0.8 * measured.m.ttft_s.p95);
  // The run at four queued nobody: by default a larger batch is not tried there.
  const SimRun four = simulate_run(config(0, 8192));
  const oj q = write_point(four, config(0, 8192), kDir / "batch4", 0);
  const auto none = serve_counterfactuals(q, 0, (kDir / "batch4").string(), {});
  EXPECT_EQ(find(none, "max_batch").figures.tokens_per_s, std::nullopt);
  EXPECT_NE(find(none, "max_batch").reason.find("no request waited"), std::string::npos);
}

TEST(ServeWhatif, NoHostGapGivesTheRunWithoutItBack) {
  const SchedulerConfig c = config(0, 8192);
  const SimRun measured = simulate_run(c, 2e-3);
  const oj p = write_point(measured, c, kDir / "host", 2e-3);
  const auto cfs = serve_counterfactuals(p, 0, (kDir / "host").string(), {});
  expect_truth(find(cfs, "no_host_gap"), simulate_run(c).m);
  // Nothing else to fix: no straggler (equal ranks), no jitter (the law is exact).
  EXPECT_NEAR(*find(cfs, "no_straggler").figures.tokens_per_s, measured.m.output_tokens_per_s,
              1e-6 * measured.m.output_tokens_per_s);
  EXPECT_EQ(find(cfs, "kv_budget").figures.tokens_per_s, std::nullopt);  // the cache held all
  EXPECT_NE(find(cfs, "kv_budget").reason.find("already holds"), std::string::npos);
}

// Rank 1 does 3 ms of host work inside every step (results 1.21.0 log it as its host_s): without
// it the steps are the law's, so no_straggler must give the run without the late rank back.
TEST(ServeWhatif, NoStragglerRemovesALateRanksHostWork) {
  const SchedulerConfig c = config(0, 8192);
  const SimRun measured = simulate_run(c, 3e-3);
  const oj p = write_point(measured, c, kDir / "late", 0, 3e-3);
  const auto cfs = serve_counterfactuals(p, 0, (kDir / "late").string(), {});
  const SimRun truth = simulate_run(c);
  expect_truth(find(cfs, "no_straggler"), truth.m);
  EXPECT_GT(truth.m.output_tokens_per_s / measured.m.output_tokens_per_s, 1.05);  // it mattered
  EXPECT_NE(find(cfs, "no_straggler").inputs.modelled[0].find("host time inside"),
            std::string::npos);
  // The same run logged before 1.21.0 (no host time per rank) has no straggler to remove, and
  // its counterfactual says it is compute only.
  const oj old = write_point(measured, c, kDir / "late-old", 3e-3);
  const auto was = serve_counterfactuals(old, 0, (kDir / "late-old").string(), {});
  EXPECT_NEAR(*find(was, "no_straggler").figures.tokens_per_s / measured.m.output_tokens_per_s, 1.0,
              1e-6);
  EXPECT_NE(find(was, "no_straggler").inputs.modelled[0].find("compute only"), std::string::npos);
}

TEST(ServeWhatif, ALogThatIsNotTheRunIsRefused) {
  const SchedulerConfig c = config(0, 8192);
  oj p = write_point(simulate_run(c), c, kDir / "bad", 0);
  p["params"]["serve"]["max_batch"] = 2;  // not the config that made the log
  const auto cfs = serve_counterfactuals(p, 0, (kDir / "bad").string(), {});
  for (const Counterfactual& cf : cfs) {
    EXPECT_EQ(cf.figures.tokens_per_s, std::nullopt) << cf.name;
    EXPECT_NE(cf.reason.find("does not describe the run"), std::string::npos) << cf.reason;
  }
}

// Decode-only steps of 1..5 rows, then prefill steps of 40..1200 tokens beside 0..4 decodes.
std::vector<StepShape> shapes_for_fit() {
  std::vector<StepShape> s;
  for (int k = 0; k < 20; ++k) {
    const double rows = 1 + k % 5;
    s.push_back({rows, rows, rows * (100 + 37 * k), 0, 0});
  }
  for (int k = 0; k < 20; ++k) {
    const double rows = k % 5, prompt = 40 + 60 * k;
    s.push_back({rows, rows + prompt, rows * 500, prompt * (prompt + 1) / 2, 0});
  }
  return s;
}

TEST(StepFit, RecoversTheMemoryAndComputeLaws) {
  const std::vector<StepShape> shapes = shapes_for_fit();
  std::vector<double> d;
  for (const StepShape& s : shapes)
    d.push_back(std::max(2e-3 + 1e-3 * s.decode_rows, 1e-3 + 1e-4 * s.tokens));
  const StepFit f = fit_steps(shapes, d);
  EXPECT_NEAR(f.mem_fixed_s, 2e-3, 1e-9);
  EXPECT_NEAR(f.per_decode_row_s, 1e-3, 1e-9);
  EXPECT_NEAR(f.per_context_s, 0.0, 1e-12);
  EXPECT_NEAR(f.compute_fixed_s, 1e-3, 1e-9);
  EXPECT_NEAR(f.per_token_s, 1e-4, 1e-10);
  EXPECT_EQ(f.per_prefill_attended_s, 0.0);  // no chunk with a cached prefix: not fitted
  EXPECT_LT(f.error, 1e-9);
  // Under the compute law's reach, a step is the memory law's: 40 tokens beside 4 decodes.
  EXPECT_NEAR(f.predict({4, 44, 2000, 820, 0}), 6e-3, 1e-9);
  EXPECT_NEAR(f.predict({4, 1004, 2000, 5e5, 0}), 1e-3 + 1e-4 * 1004, 1e-9);
}

TEST(StepFit, DropsATermThatWouldBeNegative) {
  const std::vector<StepShape> shapes = shapes_for_fit();
  std::vector<double> d;
  // Decode steps that get faster with context: the term is dropped, not fitted negative.
  for (const StepShape& s : shapes)
    d.push_back(has_prefill(s) ? 1e-3 + 1e-4 * s.tokens : 0.05 - 1e-6 * s.decode_context);
  const StepFit g = fit_steps(shapes, d);
  EXPECT_EQ(g.per_context_s, 0.0);
  EXPECT_GE(g.per_decode_row_s, 0.0);
  EXPECT_GT(g.error, 0.0);
}

}  // namespace
}  // namespace tpb
