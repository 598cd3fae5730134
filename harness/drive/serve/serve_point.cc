// Building a serving point. The timeline analysis is the same as for a fixed-batch point; its
// per-step figures (flops, bytes, tokens) are the means over this run's steps, since every
// step of a serving run has its own shape, and the record says so in cost.scope.
#include "harness/drive/serve/serve_point.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/analysis/itl_attribution.h"
#include "harness/drive/point_analysis.h"
#include "harness/drive/serve/serve_resume.h"
#include "harness/record/json/results_json.h"
#include "harness/record/point_builder.h"
#include "harness/report/serve/serve_trace.h"
#include "harness/report/trace_writer.h"
#include "harness/serve/serve_metrics.h"

namespace tpb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The mean of the costs of the steps the timeline holds (`kept`; empty: all), field by field;
// layer ops by position (every step lists the same ops in the same order).
StepCost mean_cost(const std::vector<ServeStep>& all, const std::vector<int>& kept) {
  std::vector<const ServeStep*> steps;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (kept.empty()) steps.push_back(&all[i]);
  for (int i : kept) steps.push_back(&all.at(static_cast<std::size_t>(i)));
  StepCost m;
  if (steps.empty()) return m;
  m.layer_ops = steps.front()->cost.layer_ops;
  for (const ServeStep* s : steps)
    if (!s->cost.tail_ops.empty()) {
      m.tail_ops = s->cost.tail_ops;
      break;
    }
  m.comm = steps.front()->cost.comm;
  for (auto& o : m.layer_ops) o = OpCost{o.op};
  for (auto& o : m.tail_ops) o = OpCost{o.op};
  const double n = static_cast<double>(steps.size());
  for (const ServeStep* s : steps) {
    const StepCost& c = s->cost;
    m.flops += c.flops / n;
    m.bytes_read += c.bytes_read / n;
    m.bytes_written += c.bytes_written / n;
    m.weight_bytes += c.weight_bytes / n;
    m.kv_read_bytes += c.kv_read_bytes / n;
    m.kv_write_bytes += c.kv_write_bytes / n;
    m.activation_bytes += c.activation_bytes / n;
    m.tokens += c.tokens / n;
    m.comm_bytes += c.comm_bytes / n;
    m.layers = c.layers;
    for (std::size_t i = 0; i < m.layer_ops.size() && i < c.layer_ops.size(); ++i) {
      m.layer_ops[i].flops += c.layer_ops[i].flops / n;
      m.layer_ops[i].bytes_read += c.layer_ops[i].bytes_read / n;
      m.layer_ops[i].bytes_written += c.layer_ops[i].bytes_written / n;
      m.layer_ops[i].weight_bytes += c.layer_ops[i].weight_bytes / n;
      m.layer_ops[i].kv_read_bytes += c.layer_ops[i].kv_read_bytes / n;
      m.layer_ops[i].kv_write_bytes += c.layer_ops[i].kv_write_bytes / n;
    }
    // Steps that sampled no row (all chunks mid-prompt) have no tail: they count as zero.
    for (std::size_t i = 0; i < m.tail_ops.size() && i < c.tail_ops.size(); ++i) {
      m.tail_ops[i].flops += c.tail_ops[i].flops / n;
      m.tail_ops[i].bytes_read += c.tail_ops[i].bytes_read / n;
      m.tail_ops[i].bytes_written += c.tail_ops[i].bytes_written / n;
      m.tail_ops[i].weight_bytes += c.tail_ops[i].weight_bytes / n;
    }
  }
  return m;
}

// The record holds serve's own distribution and goodput types, so each is one copy.
void add_serve_metrics(MetricsRecord& m, const ServeMetrics& s) {
  m.ttft_s = s.ttft_s;
  m.ttft_admitted_s = s.ttft_admitted_s;
  m.tpot_s = s.tpot_s;
  m.itl_s = s.itl_s;
  m.e2el_s = s.e2el_s;
  m.queue_s = s.queue_s;
  m.decode_s = s.decode_s;
  m.output_tokens_per_s = s.output_tokens_per_s;
  m.total_tokens_per_s = s.total_tokens_per_s;
  m.request_throughput = s.request_throughput;
  m.goodput = s.goodput;
}

// A step was held back by memory: the cache could not take what waited, or a running
// sequence had to be preempted for room.
bool kv_limited(const StepPlan& p) {
  return p.preempted > 0 || (p.waiting > 0 && p.kv_blocked);
}

// The per-op roofline time of a step and of its decode rows alone (weights are read once either
// way): the share of its compute the prefill rows account for is 1 - decode / all.
struct RowRoofline {
  double all_s = 0, decode_s = 0;
};

RowRoofline row_roofline(const ServeSpec& spec, int64_t layers, const StepPlan& plan,
                         const Peaks& peaks) {
  const RunSpec& r = spec.run;
  const auto time_of = [&](const StepBatch& b) {
    return ops_roofline_time_s(mixed_step_cost(r.shape, r.tp, r.dtypes(), layers, b, spec.lm_head),
                               peaks.flops, peaks.bw);
  };
  RowRoofline t;
  t.all_s = time_of(plan.batch);
  if (plan.prefill_tokens == 0) {
    t.decode_s = t.all_s;
    return t;
  }
  StepBatch decode;
  for (const SeqSlice& s : plan.batch.seqs)
    if (s.new_tokens == 1 && s.cached > 0) decode.seqs.push_back(s);
  t.decode_s = decode.seqs.empty() ? 0 : time_of(decode);
  return t;
}

double prefill_fraction(const StepPlan& plan, const RowRoofline& t) {
  if (plan.prefill_tokens == 0) return 0;
  if (t.decode_s == 0) return 1;
  return t.all_s > 0 ? std::clamp(1 - t.decode_s / t.all_s, 0.0, 1.0) : kNaN;
}

// The world rank with the most busy time (compute + its own host time) in the step.
int64_t late_rank(const ServeRun& run, const StepSplit& sp) {
  std::size_t late = 0;
  for (std::size_t r = 1; r < sp.ranks.size(); ++r)
    if (sp.ranks[r].compute_s + sp.ranks[r].host_s >
        sp.ranks[late].compute_s + sp.ranks[late].host_s)
      late = r;
  return late < run.traces.size() ? run.traces[late].rank : -1;
}

// The plan's prompt rows, as its scheduler counted them in prefill_tokens.
std::vector<PrefillRow> prefill_rows(const StepPlan& plan) {
  std::vector<PrefillRow> out;
  for (std::size_t k = 0; k < plan.batch.seqs.size() && k < plan.prompt.size(); ++k)
    if (plan.prompt[k])
      out.push_back({plan.ids[k], plan.batch.seqs[k].new_tokens, plan.batch.seqs[k].cached});
  return out;
}

std::vector<StepParts> step_parts(const ServeSpec& spec, const ServeRun& run, const Peaks& peaks) {
  std::vector<StepParts> out(run.steps.size());
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    StepParts& p = out[i];
    p.duration_s = run.steps[i].duration_s;
    p.has_prefill = run.steps[i].plan.prefill_tokens > 0;
    p.prefill_rows = prefill_rows(run.steps[i].plan);
    const int64_t tokens = run.steps[i].plan.batch.tokens();
    p.prompt_token_share =
        tokens > 0 ? static_cast<double>(run.steps[i].plan.prefill_tokens) / tokens : 0.0;
    if (i >= run.splits.size() || run.splits[i].step != static_cast<int>(i)) continue;
    const StepSplit& sp = run.splits[i];
    double transfer = 0;
    for (const RankStepSplit& r : sp.ranks) transfer += r.transfer_s / sp.ranks.size();
    p.host_s = std::max(0.0, p.duration_s - sp.device_time_s);
    // Host work one rank does inside the step beyond its peers' is waited out by them as its
    // extra compute is; what every rank has there (launches, idle at kernel boundaries) stays
    // with the compute, as a clean decode step has it too.
    p.imbalance_s = sp.max_busy_s - sp.lower_median_busy_s;
    p.late_rank = late_rank(run, sp);
    p.transfer_s = transfer;
    const double rest = std::max(0.0, p.duration_s - p.host_s - p.imbalance_s - p.transfer_s);
    const RowRoofline roof = row_roofline(spec, run.layers, run.steps[i].plan, peaks);
    const double f = prefill_fraction(run.steps[i].plan, roof);
    p.prefill_s = rest * f;
    p.decode_s = rest - p.prefill_s;
    p.decode_roofline_s = std::isfinite(roof.decode_s) ? roof.decode_s : 0;
  }
  return out;
}

// Every gap between consecutive tokens of a measured request, with the step of its later token.
std::vector<ItlGap> itl_gaps(const std::vector<RequestLog>& logs) {
  std::vector<ItlGap> g;
  for (const RequestLog& r : logs) {
    if (r.warmup || r.rejected) continue;
    for (std::size_t i = 1; i < r.token_s.size() && i < r.token_step.size(); ++i)
      g.push_back({r.token_s[i] - r.token_s[i - 1], r.token_step[i], r.id, static_cast<int64_t>(i),
                   r.token_step[i - 1], r.preemptions});
  }
  return g;
}

LateTokenRecord late_token_record(const ItlAttribution::LateToken& t) {
  LateTokenRecord r{
      t.request, t.token, t.step,   t.tokens,
      t.gap_s,   t.part,  t.part_s, t.rank >= 0 ? std::optional<int64_t>(t.rank) : std::nullopt};
  const ItlShares& e = t.parts_s;
  r.parts_s = GapPartsRecord{e.prefill,   e.imbalance, e.host,           e.transfer,
                             e.bandwidth, e.jitter,    t.between_steps_s};
  r.prefilled.emplace();
  for (const PrefillRow& row : t.prefilled)
    r.prefilled->push_back({row.request, row.tokens, row.cached});
  r.prefill_requests = t.prefill_requests;
  if (t.skipped_steps >= 0) r.skipped_steps = t.skipped_steps;
  r.preemptions = t.preemptions;
  return r;
}

std::vector<LateTokenRecord> late_tokens(const ItlAttribution& a) {
  std::vector<LateTokenRecord> out;
  for (const ItlAttribution::LateToken& t : a.worst) out.push_back(late_token_record(t));
  return out;
}

ItlAttributionRecord attribution_record(const ItlAttribution& a) {
  return {a.tail,
          a.threshold_s,
          a.samples,
          a.excess_s,
          {a.shares.prefill, a.shares.imbalance, a.shares.host, a.shares.transfer,
           a.shares.bandwidth, a.shares.jitter},
          a.decode_step_p50_s,
          a.prefill_step_p50_s,
          a.method,
          late_tokens(a)};
}

ServeRunRecord run_record(const ServeRun& run, const ServeMetrics& m, int64_t point_index) {
  ServeRunRecord r;
  r.steps = static_cast<int64_t>(run.steps.size());
  r.requests_completed = m.completed;
  r.requests_rejected = m.rejected;
  r.preemptions = run.preemptions;
  r.duration_s = m.duration_s;
  r.input_tokens = m.input_tokens;
  r.output_tokens = m.output_tokens;
  r.kv_capacity_tokens = run.sched.kv_blocks * run.sched.block_tokens;
  for (const ServeStep& s : run.steps) {
    r.max_running = std::max(r.max_running, s.plan.running);
    r.max_waiting = std::max(r.max_waiting, s.plan.waiting);
    r.kv_peak_tokens = std::max(r.kv_peak_tokens, s.plan.kv_used_tokens);
    r.kv_full_steps += kv_limited(s.plan) ? 1 : 0;
    r.prefill_steps += s.plan.prefill_tokens > 0 ? 1 : 0;
    r.busy_s += s.duration_s;
  }
  for (const StepSplit& s : run.splits) {
    const auto i = static_cast<std::size_t>(s.step);
    if (i < run.steps.size())
      r.host_gap_s += std::max(0.0, run.steps[i].duration_s - s.device_time_s);
  }
  (void)point_index;
  r.steps_file = "steps.jsonl";
  r.requests_file = "requests.jsonl";
  r.token_times_limit = kTokenTimesLimit;
  return r;
}

std::vector<StepLogRecord> step_lines(const ServeRun& run, int64_t point_index) {
  std::vector<StepLogRecord> out;
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const ServeStep& s = run.steps[i];
    StepLogRecord l;
    l.point = point_index;
    l.step = static_cast<int64_t>(i);
    l.t_s = s.end_s;
    l.duration_s = s.duration_s;
    l.running = s.plan.running;
    l.waiting = s.plan.waiting;
    l.preempted = s.plan.preempted;
    l.batch_tokens = s.plan.batch.tokens();
    l.prefill_tokens = s.plan.prefill_tokens;
    l.decode_tokens = s.plan.decode_tokens;
    l.padding_tokens = s.plan.padding_tokens;
    l.kv_used_tokens = s.plan.kv_used_tokens;
    l.kv_capacity_tokens = s.plan.kv_capacity_tokens;
    l.device_time_s = kNaN;
    l.host_gap_s = kNaN;
    if (i < run.splits.size() && run.splits[i].step == static_cast<int>(i)) {
      const StepSplit& sp = run.splits[i];
      l.device_time_s = sp.device_time_s;
      l.host_gap_s = std::max(0.0, s.duration_s - sp.device_time_s);
      for (std::size_t r = 0; r < sp.ranks.size(); ++r)
        l.ranks.push_back({run.traces[r].rank, sp.ranks[r].compute_s, sp.ranks[r].wait_s,
                           sp.ranks[r].transfer_s, sp.ranks[r].host_s});
    }
    out.push_back(std::move(l));
  }
  return out;
}

double reached(double t) {
  return t < 0 ? kNaN : t;
}

std::vector<RequestLogRecord> request_lines(const std::vector<RequestLog>& logs,
                                            int64_t point_index) {
  std::vector<RequestLogRecord> out;
  for (const RequestLog& q : logs) {
    RequestLogRecord l;
    static_cast<RequestOutcome&>(l) = q;
    for (double* t : {&l.admitted_s, &l.first_token_s, &l.finish_s}) *t = reached(*t);
    l.point = point_index;
    const auto keep = std::min<std::size_t>(q.token_s.size(), kTokenTimesLimit);
    l.token_s.assign(q.token_s.begin(), q.token_s.begin() + static_cast<std::ptrdiff_t>(keep));
    out.push_back(std::move(l));
  }
  return out;
}

// The first --trace-steps steps of every rank, with the queue's counters and first-token marks.
nlohmann::ordered_json serve_trace(const ServeSpec& spec, const ServeRun& run,
                                   const PointParams& params) {
  TraceOptions to;
  to.max_steps = spec.run.trace_steps;
  to.meta = trace_meta_json(params);
  nlohmann::ordered_json doc = chrome_trace(run.traces, to);
  std::vector<StepCounters> counters;
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const StepPlan& p = run.steps[i].plan;
    counters.push_back(
        {static_cast<int>(i), p.running, p.waiting, p.kv_used_tokens, p.prefill_tokens});
  }
  std::vector<FirstToken> first;
  for (const RequestLog& r : run.requests)
    if (!r.token_step.empty())
      first.push_back(
          {r.id, static_cast<int>(r.token_step.front()), r.first_token_s - r.arrival_s});
  add_serve_events(doc, run.traces, counters, first);
  return doc;
}

// Requests rejected at arrival (longer than the KV cache could ever hold) are left out of every
// serving metric. Where some completed, the point says how many were left out; where none did,
// nothing was measured: the point is skipped with the first reason, as a run point that cannot
// fit is, so that neither the table nor the curve reads it as a load that met its latency.
void reject_note(PointRecord& p, const std::vector<RequestLog>& logs, const ServeMetrics& m) {
  std::string first;
  for (const RequestLog& r : logs)
    if (!r.warmup && r.rejected) {
      first = r.reason;
      break;
    }
  const std::string what = std::to_string(m.rejected) + " of " +
                           std::to_string(m.rejected + m.completed) +
                           " measured requests were rejected at arrival (the first: " + first + ")";
  if (m.completed > 0) {
    p.warnings->push_back("requests_rejected: " + what +
                          "; the serving metrics cover the completed ones");
    return;
  }
  PointRecord skipped;
  skipped.params = p.params;
  skipped.status = PointStatus::skipped;
  skipped.reason = "no measured request completed: " + what;
  skipped.serve = p.serve;
  p = std::move(skipped);
}

}  // namespace

ServeParamsRecord serve_params_record(const ServeSpec& spec, std::size_t load_index,
                                      int64_t kv_capacity_tokens) {
  const LoadSpec l = spec.load_at(load_index);
  const SchedulerConfig c = spec.scheduler_at(load_index);
  ServeParamsRecord p;
  p.load = spec.axis;
  p.x = spec.loads.at(load_index);
  if (l.concurrency > 0) p.concurrency = l.concurrency;
  if (l.rate > 0) p.rate = l.rate;
  p.burstiness = l.burstiness;
  p.requests = l.requests;
  p.warmup_requests = l.warmup_requests;
  p.prompt_len = l.prompt.text();
  p.output_len = l.output.text();
  p.trace = l.trace_file;
  p.scheduler = scheduler_name(c.kind);
  p.chunk = c.chunk;
  p.max_batch = c.max_running;
  p.max_step_tokens = c.max_step_tokens;
  p.kv_capacity_tokens = kv_capacity_tokens;
  p.block_tokens = c.block_tokens;
  p.host_overhead_us = spec.host_overhead_s * 1e6;
  p.lm_head = spec.lm_head;
  p.slo = spec.slo.text();
  return p;
}

ServePoint build_serve_point(const ServeSpec& spec, std::size_t load_index, const ServeRun& run,
                             const Peaks& peaks, const DeviceCaps& caps, int64_t point_index,
                             const std::string& trace_name) {
  const StepCost cost = mean_cost(run.steps, run.timeline_steps);
  AnalysisInput in =
      analysis_input(run.traces, cost, peaks, spec.run.occupancy_window_s, run.samples);
  in.basis = StepTimeBasis::mean;  // cost is the mean over the steps: totals over totals
  ServePoint out;
  PointRecord& p = out.record;
  p = ok_point(spec.run, run.layers, cost, peaks, analyze(in), run.samples, caps);
  p.params.phase = "serve";
  p.params.batch = run.sched.max_running;
  p.params.context = 0;
  p.params.prompt = 0;
  p.params.steps = static_cast<int64_t>(run.steps.size());
  p.params.serve =
      serve_params_record(spec, load_index, run.sched.kv_blocks * run.sched.block_tokens);
  if (p.cost)
    p.cost->scope = "per rank, mean over the serving run's steps (each step has its own batch)";
  if (!run.timeline_steps.empty())
    p.warnings->push_back(
        "timeline_sampled: the timeline analysis (ranks, collectives, straggler, occupancy, "
        "MBU, MFU and cost) covers a seeded sample of " +
        std::to_string(run.timeline_steps.size()) + " of the " + std::to_string(run.steps.size()) +
        " steps, to keep the virtual ranks' segments in memory; the step log, the ITL "
        "attribution and the serving metrics cover every step");
  const ServeMetrics m = serve_metrics(run.requests, spec.slo);
  add_serve_metrics(*p.metrics, m);
  // Every rank is a GPU (one TP group: world = tp), so the point's GPUs are its ranks.
  if (spec.price && p.ranks)
    p.metrics->cost_per_mtok =
        cost_per_mtok(*spec.price, static_cast<int64_t>(p.ranks->size()),
                      p.metrics->output_tokens_per_s, p.metrics->total_tokens_per_s);
  p.metrics->itl_attribution =
      attribution_record(attribute_itl(itl_gaps(run.requests), step_parts(spec, run, peaks)));
  p.serve = run_record(run, m, point_index);
  if (p.ops) attach_op_pricing(*p.ops, run.op_pricing);
  if (m.rejected > 0) reject_note(p, run.requests, m);
  if (!trace_name.empty() && spec.run.trace_steps > 0) {
    out.trace = serve_trace(spec, run, p.params);
    p.trace = trace_name;
    out.trace_empty = empty_serve_trace_reason(run.traces, spec.run.trace_steps, run.steps.size(),
                                               run.timeline_steps);
  }
  out.steps = step_lines(run, point_index);
  out.requests = request_lines(run.requests, point_index);
  out.curve = curve_input(p);
  return out;
}

ServePoint oom_serve_point(const ServeSpec& spec, std::size_t load_index, PointRecord oom) {
  ServePoint out;
  out.record = std::move(oom);
  out.record.params.phase = "serve";
  out.record.params.serve = serve_params_record(spec, load_index, 0);
  out.curve = curve_input(out.record);
  return out;
}

}  // namespace tpb
