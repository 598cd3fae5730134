// Step times in a replay come from one fit of the run's own steps (record/whatif/step_fit.h) and
// each measured step's ratio to it: the k-th replayed step with prefill rows takes the fit of its
// own batch times the ratio of the k-th measured step with prefill rows (cycled past the last),
// and likewise for decode-only steps. A fix that leaves the batches as
// they were thus gives back each step's measured time, and one that changes them keeps the
// run's noise, step by step, on the new shapes; no_jitter takes the median ratio instead.
#include "harness/record/whatif/serve_whatif.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "harness/analysis/stats.h"
#include "harness/record/whatif/serve_replay.h"
#include "harness/record/whatif/step_fit.h"
#include "harness/record/whatif/topology_move.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;
using Duration = std::function<double(const StepPlan&, std::size_t)>;

struct FittedSteps {
  StepFit fit;
  // measured / fit, per measured step, apart for the steps with and without prefill rows (a
  // replayed step takes the ratio of its own kind: prefill steps may miss the fit in ways
  // decode steps do not)
  std::vector<double> ratio[2];
  double median_ratio = 1;
};

FittedSteps fit_on(const ServeReplayBase& b, const std::vector<double>& targets) {
  std::vector<StepShape> shapes;
  for (const StepPlan& p : b.plans) shapes.push_back(step_shape(p.batch));
  FittedSteps f{fit_steps(shapes, targets), {}, 1};
  const double mean = std::max(1e-12, [&] {
    double s = 0;
    for (double t : targets) s += t;
    return s / static_cast<double>(targets.size());
  }());
  std::vector<double> all;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const double fit = f.fit.predict(shapes[k]);
    all.push_back(targets[k] / (fit > 0 ? fit : mean));
    f.ratio[has_prefill(shapes[k])].push_back(all.back());
  }
  f.median_ratio = percentile(all, 50);
  for (auto& r : f.ratio)
    if (r.empty()) r = all;  // a kind the run never had takes every step's
  return f;
}

Duration noisy(const FittedSteps& f) {
  auto seen = std::make_shared<std::array<std::size_t, 2>>();
  return [&f, seen](const StepPlan& p, std::size_t) {
    const StepShape s = step_shape(p.batch);
    const std::vector<double>& r = f.ratio[has_prefill(s)];
    return f.fit.predict(s) * r[(*seen)[has_prefill(s)]++ % r.size()];
  };
}

Duration smooth(const FittedSteps& f) {
  return [&f](const StepPlan& p, std::size_t) {
    return f.fit.predict(step_shape(p.batch)) * f.median_ratio;
  };
}

// The largest relative difference between the rebuilt run's figures and the measured ones.
double rebuild_error(const ServeReplayBase& b) {
  double e = 0;
  auto one = [&e](const std::optional<double>& a, const std::optional<double>& m) {
    if (a && m && *m != 0) e = std::max(e, std::abs(*a / *m - 1));
  };
  one(b.unchanged.tokens_per_s, b.measured.tokens_per_s);
  one(b.unchanged.ttft_p95_s, b.measured.ttft_p95_s);
  one(b.unchanged.itl_p50_s, b.measured.itl_p50_s);
  one(b.unchanged.itl_p95_s, b.measured.itl_p95_s);
  one(b.unchanged.itl_p99_s, b.measured.itl_p99_s);
  return e;
}

struct Fix {
  const char* name;
  SchedulerConfig cfg;
  const FittedSteps* steps;
  bool smoothed;
  std::string modelled;
};

Counterfactual replay_fix(const ServeReplayBase& b, int index, const Fix& fx) {
  Counterfactual c{fx.name, index, {}, b.measured, {}, {}, ""};
  // The measured ITL sample is the rebuilt run's: the same token times (replay_error says so).
  c.measured.itl_quantiles_s = b.unchanged.itl_quantiles_s;
  c.figures = replay_serve(b, fx.cfg, fx.smoothed ? smooth(*fx.steps) : noisy(*fx.steps));
  c.inputs.measured = {"the requests (lengths, arrivals, warm-up) from the requests log",
                       "every step's time and batch from the step log, rebuilt by the "
                       "scheduler that ran"};
  c.inputs.modelled = {fx.modelled};
  c.inputs.fitted = {fx.steps->fit.text()};
  c.inputs.fit_error = fx.steps->fit.error;
  c.inputs.steps = static_cast<int>(b.steps.size());
  c.inputs.replay_error = rebuild_error(b);
  const WhatifFigures& m = b.measured;
  if (m.itl_p99_s && m.itl_p50_s && c.figures.itl_p99_s &&
      *m.itl_p99_s - *m.itl_p50_s > 1e-3 * *m.itl_p50_s)
    c.p99_excess_removed = (*m.itl_p99_s - *c.figures.itl_p99_s) / (*m.itl_p99_s - *m.itl_p50_s);
  else
    c.reason = "p99_excess_removed: no ITL tail (p99 within 0.1% of p50) or no ITL";
  if (!c.figures.goodput)
    c.reason += std::string(c.reason.empty() ? "" : "; ") + "goodput: the run gave no --slo";
  return c;
}

// Per rank, the factor that brings its total of `part` over the steps down to the ranks' lower
// median of those totals (1 for a rank at or under it, and for every rank of a log without it).
std::vector<double> down_to_median(const ServeReplayBase& b,
                                   std::vector<double> MeasuredStep::*part, std::size_t n) {
  std::vector<double> total(n, 0.0), scale(n, 1.0);
  for (const MeasuredStep& s : b.steps)
    for (std::size_t r = 0; r < n && r < (s.*part).size(); ++r) total[r] += (s.*part)[r];
  const double median = lower_median(total);
  for (std::size_t r = 0; r < n; ++r)
    if (total[r] > median && total[r] > 0) scale[r] = median / total[r];
  return scale;
}

// Each rank's compute, and apart its host time inside the steps, scaled down to the ranks' lower
// median (straggler.cause's compute and outside_ops): the slowest rank's busy time per step is
// what the others wait for at the step's collectives, so the step loses what that max loses.
std::vector<double> without_straggler(const ServeReplayBase& b, std::string& why) {
  const std::size_t n = b.steps.front().rank_compute_s.size();
  if (n < 2) {
    why = "the step log has under 2 ranks' compute per step: no straggler to remove";
    return {};
  }
  const std::vector<double> cs = down_to_median(b, &MeasuredStep::rank_compute_s, n);
  const std::vector<double> hs = down_to_median(b, &MeasuredStep::rank_host_s, n);
  std::vector<double> out;
  for (const MeasuredStep& s : b.steps) {
    double was = 0, now = 0;
    for (std::size_t r = 0; r < n && r < s.rank_compute_s.size(); ++r) {
      const double c = s.rank_compute_s[r], h = r < s.rank_host_s.size() ? s.rank_host_s[r] : 0;
      was = std::max(was, c + h);
      now = std::max(now, c * cs[r] + h * hs[r]);
    }
    out.push_back(std::max(s.duration_s - (was - now), 1e-9));
  }
  return out;
}

std::string straggler_modelled(const ServeReplayBase& b) {
  const bool host = !b.steps.front().rank_host_s.empty();
  return std::string("a rank whose compute over the steps exceeds the ranks' lower median ") +
         (host ? "scaled down to it, and apart likewise its host time inside the steps; "
               : "scaled down to it (the step log, older than results 1.21.0, has no host "
                 "time per rank: compute only); ") +
         "each step shortened by the slowest rank's busy time it no longer has";
}

std::vector<Counterfactual> nulls(int index, const std::string& reason) {
  std::vector<Counterfactual> out;
  for (const char* n : {"no_straggler", "no_host_gap", "no_jitter", "chunked_prefill", "kv_budget",
                        "max_batch", "topology", "fewer_kernels"})
    out.push_back({n, index, {}, {}, {}, {}, reason});
  return out;
}

// chunked_prefill's config, or the reason it does not apply.
std::string chunked(const ServeReplayBase& b, int64_t want, SchedulerConfig& cfg) {
  cfg = b.cfg;
  cfg.chunk = want > 0 ? want : std::max<int64_t>(512, b.cfg.max_running);
  if (b.cfg.kind == SchedulerKind::static_batch)
    return "a static batch takes its prompts whole: chunking does not apply";
  if (cfg.chunk == b.cfg.chunk)
    return "the run already ran chunked at " + std::to_string(cfg.chunk) + " tokens";
  if (cfg.chunk < b.cfg.max_running)
    return "a chunk of " + std::to_string(cfg.chunk) + " tokens is below the batch of " +
           std::to_string(b.cfg.max_running) + ": every decode must fit a step's budget";
  return "";
}

// Blocks of the run's longest request, prompt and output.
int64_t longest_blocks(const ServeReplayBase& b) {
  int64_t longest = 0;
  for (const Request& r : b.requests) longest = std::max(longest, r.prompt_len + r.output_len);
  const int64_t bt = std::max<int64_t>(b.cfg.block_tokens, 1);
  return (longest + bt - 1) / bt;
}

// kv_budget's config (the cache at `want` tokens, by default every running sequence at its
// longest), or the reason it does not apply.
std::string bigger_cache(const ServeReplayBase& b, int64_t want, SchedulerConfig& cfg) {
  cfg = b.cfg;
  const int64_t bt = std::max<int64_t>(b.cfg.block_tokens, 1);
  const int64_t need = b.cfg.max_running * longest_blocks(b) * bt;
  const int64_t had = b.cfg.kv_blocks * bt;
  if (want <= 0 && need <= had)
    return "the run's cache (" + std::to_string(had) +
           " tokens) already holds every running "
           "sequence at its longest (" +
           std::to_string(need) + "); give --kv-budget to try another";
  cfg.kv_blocks = (want > 0 ? want : need) / bt;
  cfg.max_ctx = cfg.kv_blocks * bt;
  if (cfg.kv_blocks < 1)
    return "a cache of " + std::to_string(want) + " tokens holds no block of " + std::to_string(bt);
  return "";
}

// max_batch's config (`want` sequences per step, by default twice the run's; the cache at
// `kv_tokens` where given, else the run's), or the reason it does not apply: by default only
// where requests waited with the batch at its limit, as only there does a larger one admit
// anyone sooner.
std::string bigger_batch(const ServeReplayBase& b, int64_t want, int64_t kv_tokens,
                         SchedulerConfig& cfg) {
  cfg = b.cfg;
  cfg.max_running = want > 0 ? want : 2 * b.cfg.max_running;
  if (kv_tokens > 0) {
    cfg.kv_blocks = kv_tokens / std::max<int64_t>(b.cfg.block_tokens, 1);
    cfg.max_ctx = cfg.kv_blocks * cfg.block_tokens;
  }
  const std::string had = std::to_string(b.cfg.max_running);
  if (cfg.max_running == b.cfg.max_running) return "the run already ran at " + had + " sequences";
  if (cfg.kind == SchedulerKind::continuous && cfg.chunk > 0 && cfg.chunk < cfg.max_running)
    return "a batch of " + std::to_string(cfg.max_running) + " is over the run's chunk of " +
           std::to_string(cfg.chunk) + " tokens: every decode must fit a step's budget";
  if (cfg.kv_blocks < 1)
    return "a cache of " + std::to_string(kv_tokens) + " tokens holds no block";
  bool waited_at_limit = false;
  for (const StepPlan& p : b.plans)
    waited_at_limit |=
        p.waiting > 0 && static_cast<int64_t>(p.batch.seqs.size()) >= b.cfg.max_running;
  if (want <= 0 && !waited_at_limit)
    return "no request waited while the running batch was at its limit of " + had +
           " sequences: a larger one admits none sooner; give --max-batch to try another";
  return "";
}

// What max_batch assumes, and whether its cache holds the larger batch.
std::string batch_modelled(const ServeReplayBase& b, const SchedulerConfig& cfg) {
  const int64_t holds = cfg.kv_blocks / std::max<int64_t>(longest_blocks(b), 1);
  std::string s = "up to " + std::to_string(cfg.max_running) + " sequences per step (the run had " +
                  std::to_string(b.cfg.max_running) + "), a KV cache of " +
                  std::to_string(cfg.kv_blocks * cfg.block_tokens) +
                  " tokens, the token budget kept: admissions and preemptions replayed, steps of "
                  "more rows at the fitted law";
  int64_t rows = 0;
  for (const MeasuredStep& m : b.steps) rows = std::max(rows, m.decode_tokens);
  if (cfg.max_running > rows)
    s += "; decode steps of up to " + std::to_string(cfg.max_running) +
         " rows, past the run's largest (" + std::to_string(rows) +
         "): the law extrapolated, blind to a kernel or all-reduce switch past them";
  if (holds < cfg.max_running)
    s += "; that cache holds " + std::to_string(holds) +
         " sequences at their longest, so preemptions may undo the larger batch: give "
         "--kv-budget for one that holds it";
  return s;
}

}  // namespace

std::vector<Counterfactual> serve_counterfactuals(const oj& point, int index,
                                                  const std::string& dir,
                                                  const WhatifOptions& opt) {
  ServeReplayBase b;
  std::string why = rebuild_serve_point(point, index, dir, b);
  if (!why.empty()) return nulls(index, why);
  std::vector<double> measured, device;
  for (const MeasuredStep& s : b.steps) {
    measured.push_back(s.duration_s);
    device.push_back(std::isfinite(s.device_time_s) && s.device_time_s > 0 ? s.device_time_s
                                                                           : s.duration_s);
  }
  const FittedSteps as_run = fit_on(b, measured), no_host = fit_on(b, device);
  std::vector<Counterfactual> out;
  out.push_back(replay_fix(b, index,
                           {"no_jitter", b.cfg, &as_run, true,
                            "every step at its batch's fitted time times the median "
                            "ratio of measured to fitted: no step noisier than the "
                            "typical one"}));
  out.push_back(replay_fix(b, index,
                           {"no_host_gap", b.cfg, &no_host, false,
                            "each step at its device time (the step log's "
                            "device_time_s): no host work between the steps"}));
  std::string straggler_why;
  const std::vector<double> even = without_straggler(b, straggler_why);
  FittedSteps no_slow;
  if (even.empty()) {
    out.push_back({"no_straggler", index, {}, {}, {}, {}, straggler_why});
  } else {
    no_slow = fit_on(b, even);
    out.push_back(
        replay_fix(b, index, {"no_straggler", b.cfg, &no_slow, false, straggler_modelled(b)}));
  }
  SchedulerConfig cfg;
  if (why = chunked(b, opt.chunk, cfg); why.empty())
    out.push_back(replay_fix(b, index,
                             {"chunked_prefill", cfg, &as_run, false,
                              "prefill chunked at " + std::to_string(cfg.chunk) +
                                  " tokens per step (Sarathi-Serve's stall-free "
                                  "order), the KV capacity kept"}));
  else
    out.push_back({"chunked_prefill", index, {}, {}, {}, {}, why});
  if (why = bigger_cache(b, opt.kv_budget, cfg); why.empty())
    out.push_back(replay_fix(
        b, index,
        {"kv_budget", cfg, &as_run, false,
         "a KV cache of " + std::to_string(cfg.kv_blocks * cfg.block_tokens) +
             " tokens (the run had " + std::to_string(b.cfg.kv_blocks * b.cfg.block_tokens) +
             "): admissions and preemptions replayed"}));
  else
    out.push_back({"kv_budget", index, {}, {}, {}, {}, why});
  if (why = bigger_batch(b, opt.max_batch, opt.kv_budget, cfg); why.empty())
    out.push_back(replay_fix(b, index, {"max_batch", cfg, &as_run, false, batch_modelled(b, cfg)}));
  else
    out.push_back({"max_batch", index, {}, {}, {}, {}, why});
  ServeOnTopology moved;
  if (why = serve_on_topology(point, b, opt, moved); why.empty()) {
    const FittedSteps on_topology = fit_on(b, moved.step_s);
    out.push_back(replay_fix(b, index, {"topology", b.cfg, &on_topology, false, moved.modelled}));
  } else {
    out.push_back({"topology", index, {}, {}, {}, {}, why});
  }
  out.push_back({"fewer_kernels",
                 index,
                 {},
                 {},
                 {},
                 {},
                 "a serve point's step log has no per-op times: replay a run point's trace"});
  return out;
}

}  // namespace tpb
