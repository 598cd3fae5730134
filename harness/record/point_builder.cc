// Point records from the analysis. Formatting into JSON is results_json.cc's; here only what
// each figure is.
#include "harness/record/point_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "harness/analysis/stats.h"
#include "harness/analysis/straggler_cause.h"
#include "harness/config/backend_traits.h"
#include "layers/reference/tolerance.h"

namespace tpb {

namespace {

StepTimeRecord step_time_record(const Summary& s) {
  return {s.p50, s.p95, s.p99, s.mean, s.min, s.max, static_cast<int64_t>(s.n)};
}

template <class F>
MinMeanMax across(const std::vector<RankMetrics>& ranks, F f) {
  std::vector<double> v;
  for (const auto& r : ranks) v.push_back(f(r));
  return min_mean_max(v);
}

AcrossRanksRecord across_ranks(const std::vector<RankMetrics>& r) {
  AcrossRanksRecord x;
  x.busy_fraction = across(r, [](const RankMetrics& m) { return m.busy_fraction; });
  x.useful_fraction = across(r, [](const RankMetrics& m) { return m.useful_fraction; });
  x.occupancy_sampled = across(r, [](const RankMetrics& m) { return m.occupancy_sampled; });
  x.host_gap_fraction = across(r, [](const RankMetrics& m) { return m.host_gap_fraction; });
  x.mbu = across(r, [](const RankMetrics& m) { return m.mbu; });
  x.mfu = across(r, [](const RankMetrics& m) { return m.mfu; });
  x.compute_s = across(r, [](const RankMetrics& m) { return m.compute_s; });
  x.wait_s = across(r, [](const RankMetrics& m) { return m.wait_s; });
  x.transfer_s = across(r, [](const RankMetrics& m) { return m.transfer_s; });
  return x;
}

MetricsRecord metrics_record(const PointAnalysis& a, const StepCost& cost, const Peaks& peaks) {
  MetricsRecord m;
  m.step_time_s = step_time_record(a.step_time);
  m.tokens_per_s = a.tokens_per_s;
  m.mbu = a.mbu;
  m.mfu = a.mfu;
  m.mbu_compute = a.mbu_compute;
  m.mfu_compute = a.mfu_compute;
  m.mfu_ceiling = a.mfu_ceiling;
  m.mfu_ceiling_ops = cost.flops / peaks.flops / ops_roofline_time_s(cost, peaks.flops, peaks.bw);
  m.intensity = a.intensity;
  m.ridge = a.ridge;
  m.roofline_fraction = a.roofline_fraction;
  m.busy_fraction = a.busy_fraction;
  m.useful_fraction = a.useful_fraction;
  m.occupancy_sampled = a.occupancy_sampled;
  m.host_gap_fraction = a.host_gap_fraction;
  m.peaks = {peaks.flops, peaks.bw, peaks.source};
  m.across_ranks = across_ranks(a.ranks);
  return m;
}

CostRecord cost_record(const StepCost& c) {
  CostRecord r;
  r.scope = "per rank, per step (all layers)";
  r.flops = c.flops;
  r.bytes_read = c.bytes_read;
  r.bytes_written = c.bytes_written;
  r.weight_bytes = c.weight_bytes;
  r.kv_read_bytes = c.kv_read_bytes;
  r.kv_write_bytes = c.kv_write_bytes;
  r.activation_bytes = c.activation_bytes;
  r.comm_bytes = c.comm_bytes;
  r.collectives_per_step = static_cast<int64_t>(c.comm.size());
  r.tokens = c.tokens;
  return r;
}

// Per-op time next to the op's cost-model bytes and FLOPs, so a slow op can be judged by its
// own bandwidth, not only by its share of the step (what Nsight's kernel table lacks).
std::vector<OpRecord> op_records(const PointAnalysis& a, const StepCost& cost, const Peaks& peaks,
                                 double layers) {
  std::vector<OpRecord> ops;
  for (std::size_t o = 0; o < static_cast<std::size_t>(Op::count); ++o) {
    const Op op = static_cast<Op>(o);
    if (op == Op::step) continue;
    double sum = 0;
    int n = 0;
    for (const auto& r : a.ranks)
      if (r.measured_steps > 0) sum += r.op_s[o] / r.measured_steps, ++n;
    const double per_step = n ? sum / n : 0;
    if (per_step <= 0) continue;
    OpRecord j;
    j.op = op_name(op);
    j.time_s_per_step = per_step;
    j.share_of_step = a.step_time.mean > 0 ? per_step / a.step_time.mean : 0;
    // A layer op runs once per layer, a tail op (the step's end) once per step.
    const auto priced = [&](const OpCost& c, double times) {
      const double bytes = (c.bytes_read + c.bytes_written) * times;
      j.bytes_per_step = bytes;
      j.flops_per_step = c.flops * times;
      j.achieved_bw = bytes / per_step;
      j.mbu = peaks.bw > 0 ? bytes / per_step / peaks.bw : 0;
    };
    for (const auto& c : cost.layer_ops)
      if (c.op == op) priced(c, layers);
    for (const auto& c : cost.tail_ops)
      if (c.op == op) priced(c, 1);
    ops.push_back(j);
  }
  return ops;
}

CollectivesRecord collectives_record(const CollectiveSummary& c) {
  return {c.count,
          {c.skew.p50, c.skew.p95, c.skew.max},
          c.wait_fraction,
          c.transfer_s_total,
          c.wait_s_total,
          c.skew_uncertainty_s,
          c.unresolved_arrivals};
}

// The analysis's figures on top of what the rank measured about itself.
RankRecord rank_record(const RankMetrics& r, const RankSample& s) {
  RankRecord j = s.rank;
  j.rank = r.rank;
  j.group = r.group;
  j.group_rank = r.group_rank;
  j.wall_s = r.wall_s;
  j.compute_s = r.compute_s;
  if (j.inject.contains("slowdown") || j.inject.contains("jitter"))
    j.injected_s = r.op_s[static_cast<std::size_t>(Op::injected)];
  j.wait_s = r.wait_s;
  j.transfer_s = r.transfer_s;
  j.busy_fraction = r.busy_fraction;
  j.useful_fraction = r.useful_fraction;
  j.host_gap_fraction = r.host_gap_fraction;
  j.occupancy_sampled = r.occupancy_sampled;
  j.step_time_p50_s = r.step_time_p50_s;
  j.mbu = r.mbu;
  j.mfu = r.mfu;
  j.mbu_compute = r.mbu_compute;
  j.mfu_compute = r.mfu_compute;
  j.arrived_last = r.arrived_last;
  j.caused_wait_s = r.caused_wait_s;
  j.collectives = r.collectives;
  j.clock_condition_violations = r.clock_condition_violations;
  return j;
}

ClockSyncRecord clock_sync_record(const std::vector<RankSample>& samples, int violations) {
  ClockSyncRecord c;
  c.method = "ping-pong to rank 0, min-RTT sample, start and end (linear drift)";
  for (const auto& s : samples) {
    const RankClockRecord& ck = s.rank.clock;
    c.max_offset_s =
        std::max({c.max_offset_s, std::fabs(ck.offset_start_s), std::fabs(ck.offset_end_s)});
    c.max_uncertainty_s = std::max(c.max_uncertainty_s, ck.uncertainty_s);
    c.drift_ppm = std::max(c.drift_ppm, std::fabs(ck.drift_ppm));
    c.offsets_s.push_back(ck.offset_start_s);
  }
  c.clock_condition_violations = violations;
  return c;
}

// JSON has no infinity: a non-finite error (a NaN in the output) is kept as 1e300, which still
// fails the check.
double json_error(double e) {
  return std::isfinite(e) ? e : 1e300;
}

// run --check's second comparison (TP > 1), over every verifier.
void add_sharded(VerificationRecord& v, const VerifySample& d) {
  if (!d.sharded_checked) return;
  ShardedCheckRecord& s = v.sharded_vs_unsharded
                              ? *v.sharded_vs_unsharded
                              : v.sharded_vs_unsharded.emplace(ShardedCheckRecord{0, 0, true, {}});
  s.max_abs_err = std::max(s.max_abs_err, json_error(d.sharded_max_abs_err));
  s.tolerance = std::max(s.tolerance, d.sharded_tolerance);
  s.passed = s.passed && d.sharded_passed;
  if (d.sharded_tokens_checked)
    s.tokens_match = s.tokens_match.value_or(true) && d.sharded_tokens_match;
}

// run --check (1.12.0): the figures are against the host fp64 layer stack.
void add_host_reference(VerificationRecord& v, const VerifySample& d, const RunSpec& spec,
                        int64_t layers) {
  v.reference =
      "host fp64 layer stack: the same seeded weights, KV cache and input, every activation in "
      "double on the host, no Device";
  if (spec.lm_head)
    v.reference +=
        "; and its logits for the greedy tokens (an id may differ only where the reference's "
        "top two logits lie within the tolerance)";
  v.max_abs_ref = std::max(v.max_abs_ref.value_or(0.0), d.max_abs_ref);
  v.tolerance_rule = ref::tolerance_rule(spec.dtype, spec.shape, layers);
  if (spec.lm_head) v.tokens_near_tie = v.tokens_near_tie.value_or(0) + d.tokens_near_tie;
  add_sharded(v, d);
}

// Every verifier (group rank 0 of each TP group) must pass.
std::optional<VerificationRecord> verification_record(const RunSpec& spec, int64_t layers,
                                                      const std::vector<RankSample>& samples) {
  std::optional<VerificationRecord> v;
  for (const auto& s : samples) {
    if (!s.is_verifier) continue;
    if (!v)
      v = VerificationRecord{0, 0, true, "unsharded tp=1 step, same weights, KV cache and input"};
    v->passed = v->passed && s.passed;
    if (s.tokens_match) {
      v->tokens_match = v->tokens_match.value_or(true) && *s.tokens_match;
      v->reference =
          "unsharded tp=1 step, same weights, KV cache and input; and its greedy "
          "tokens (the LM head's argmax) for every sequence";
    }
    if (s.verify.host_reference) add_host_reference(*v, s.verify, spec, layers);
    v->max_abs_err = std::max(v->max_abs_err, s.max_abs_err);
    v->tolerance = std::max(v->tolerance, s.tolerance);
  }
  return v;
}

// A CPU rank computes and waits (yielding) on its own thread the whole time, so time that
// thread was off a core is the scheduler's. Above 5% the timings mix the benchmark with the
// other runnable threads; ARCHITECTURE: oversubscribed runs are for function, not
// performance. Not applied to GPU backends, whose host thread may block in a synchronize.
std::string time_sliced_warning(const std::vector<RankSample>& samples, const DeviceCaps& caps) {
  if (!caps.host_compute) return "";
  constexpr double kLimit = 0.05;
  double worst = 0;
  int64_t worst_rank = -1, over = 0;
  int64_t switches = 0;
  for (const auto& s : samples) {
    if (!s.rank.host_thread) continue;
    const double f = s.rank.host_thread->descheduled_fraction;
    switches += s.rank.host_thread->involuntary_switches;
    if (f > kLimit) ++over;
    if (f > worst) worst = f, worst_rank = s.rank.rank;
  }
  if (over == 0) return "";
  return "time_sliced: " + std::to_string(over) + " rank(s) were off a core for more than 5% of " +
         "the measured steps (worst rank " + std::to_string(worst_rank) + ": " +
         std::to_string(static_cast<int>(std::lround(worst * 100))) + "%; " +
         std::to_string(switches) +
         " involuntary context switches in all): more runnable threads than cores, so compute, "
         "wait and skew include the scheduler's time";
}

// The headline figures the analysis left without a value (a zero or missing denominator), with
// the denominators as they were, so a null is never mistaken for a measured 0.
std::string null_metrics_warning(const PointAnalysis& a, const Peaks& peaks) {
  const std::pair<const char*, double> figures[] = {{"tokens_per_s", a.tokens_per_s},
                                                    {"mbu", a.mbu},
                                                    {"mfu", a.mfu},
                                                    {"mbu_compute", a.mbu_compute},
                                                    {"mfu_compute", a.mfu_compute},
                                                    {"intensity", a.intensity},
                                                    {"ridge", a.ridge},
                                                    {"mfu_ceiling", a.mfu_ceiling},
                                                    {"roofline_fraction", a.roofline_fraction}};
  std::string names;
  for (const auto& [name, v] : figures)
    if (!std::isfinite(v)) names += (names.empty() ? "" : ", ") + std::string(name);
  if (names.empty()) return "";
  return fmt::format(
      "null_metrics: {} have no value, a denominator being zero or missing (peak FLOP/s {:g}, "
      "peak bandwidth {:g} B/s, {} measured steps, mean step {:g} s, {:g} bytes per step)",
      names, peaks.flops, peaks.bw, a.step_time.n, a.step_time.mean, a.bytes);
}

// --stamps collectives where the device kept no record of some ops (no CUPTI, or the kernels
// of a replayed CUDA graph): their runs stay whole, as `compute` in ops[], and the per-op rows
// cover only the rest.
std::string coarse_ops_warning(const PointAnalysis& a, const DeviceCaps& caps) {
  double run_s = 0, total_s = 0;
  for (const auto& r : a.ranks) {
    run_s += r.op_s[static_cast<std::size_t>(Op::compute)];
    total_s += r.compute_s;
  }
  if (run_s <= 0) return "";
  return fmt::format(
      "per_op_times_partial: {:.1f}% of compute time is in runs of ops stamped as one ('compute' "
      "in ops[]: --stamps collectives, and the device recorded no per-op times for them; per-op "
      "times: {}); --stamps ops stamps every op, at a device cost per stamp",
      total_s > 0 ? 100 * run_s / total_s : 100.0, caps.per_op_times);
}

std::vector<std::string> warnings(const StepCost& cost, const Peaks& peaks, const PointAnalysis& a,
                                  const std::vector<RankSample>& samples, const DeviceCaps& caps) {
  std::vector<std::string> w;
  const double working_set = cost.weight_bytes + cost.kv_read_bytes;
  if (caps.llc_bytes > 0 && working_set < 4 * caps.llc_bytes)
    w.push_back(
        fmt::format("cache_resident: per-rank working set {:.1f} MiB is under 4x the "
                    "LLC ({:.1f} MiB); MBU against DRAM peak is not meaningful",
                    working_set / 1048576.0, caps.llc_bytes / 1048576.0));
  if (a.mbu > 1.0 || a.mfu > 1.0)
    w.push_back(
        fmt::format("peak_exceeded: the run beat its peaks (MBU {:.3f}, MFU {:.3f}); the "
                    "peaks ({}) understate this machine, e.g. a start-up probe taken "
                    "under load",
                    a.mbu, a.mfu, peaks.source));
  if (auto t = time_sliced_warning(samples, caps); !t.empty()) w.push_back(t);
  if (auto n = null_metrics_warning(a, peaks); !n.empty()) w.push_back(n);
  if (auto c = coarse_ops_warning(a, caps); !c.empty()) w.push_back(c);
  w.insert(w.end(), caps.warnings.begin(), caps.warnings.end());
  return w;
}

}  // namespace

PointParams params_record(const RunSpec& spec, int64_t layers) {
  PointParams p;
  p.phase = phase_name(spec.phase);
  p.batch = spec.batch;
  p.context = spec.phase == Phase::decode ? spec.context : 0;
  p.prompt = spec.phase == Phase::prefill ? spec.prompt : 0;
  p.tp = spec.tp;
  p.dtype = dtype_name(spec.dtype);
  if (const DTypes t = spec.dtypes(); !t.uniform()) {
    p.weight_dtype = dtype_name(t.weights);
    p.activation_dtype = dtype_name(t.activations);
    p.kv_dtype = dtype_name(t.kv);
    p.allreduce_dtype = dtype_name(t.allreduce);
  }
  p.backend = spec.backend;
  p.collective = spec.collective;
  if (collective_traits(spec.collective).host_calls) p.mpi_mode = mpi_mode_name(spec.mpi_mode);
  p.topology = spec.topology;
  p.inject = spec.inject_text;
  p.model = spec.shape.name;
  p.layers = layers;
  p.steps = spec.steps;
  p.warmup = spec.warmup;
  p.tp_groups = spec.tp_groups;
  if (spec.lm_head) p.lm_head = true;
  if (!backend_traits(spec.backend).virtual_ranks) p.stamps = stamp_level_name(spec.stamps);
  return p;
}

PointRecord oom_point(const RunSpec& spec, int64_t layers, double need_bytes, double have_bytes,
                      double check_bytes) {
  PointRecord p;
  p.params = params_record(spec, layers);
  p.status = PointStatus::oom;
  // Two decimals: enough to tell a need from a budget a few MiB apart, few enough to read.
  constexpr double G = 1073741824.0;
  if (check_bytes > 0)
    p.reason = fmt::format(
        "--check's unsharded tp = 1 reference (weights, KV cache and activations: {:.2f} GiB) "
        "does not fit beside the shard on group rank 0, which needs {:.2f} GiB in all; the "
        "smallest rank budget in the job is {:.2f} GiB (the point fits without --check)",
        check_bytes / G, need_bytes / G, have_bytes / G);
  else
    p.reason = fmt::format(
        "KV cache + weights + activations need {:.2f} GiB per rank; the smallest rank budget in "
        "the job is {:.2f} GiB",
        need_bytes / G, have_bytes / G);
  p.memory = MemoryRecord{need_bytes, have_bytes};
  return p;
}

PointRecord error_point(const RunSpec& spec, const std::string& reason) {
  PointRecord p;
  p.params = params_record(spec, spec.planned_layers());
  p.status = PointStatus::error;
  p.reason = reason;
  return p;
}

PointRecord skipped_point(const RunSpec& spec, const std::string& reason) {
  PointRecord p = error_point(spec, reason);
  p.status = PointStatus::skipped;
  return p;
}

TpPlacementRecord tp_placement(const std::vector<RankRecord>& ranks) {
  // Hosts are told apart by MPI's node (the host's first rank), named by host name.
  std::map<int64_t, std::set<int64_t>> nodes_of_group;
  std::map<int64_t, TpGroupHostsRecord> groups;
  std::set<int64_t> nodes;
  for (const RankRecord& r : ranks) {
    const int64_t node = r.node.value_or(0);
    TpGroupHostsRecord& g = groups[r.group];
    g.group = r.group;
    g.ranks.push_back(r.rank);
    if (nodes_of_group[r.group].insert(node).second) g.hosts.push_back(r.host);
    nodes.insert(node);
  }
  TpPlacementRecord t;
  t.hosts = static_cast<int64_t>(nodes.size());
  for (auto& [id, g] : groups) {
    t.crosses_hosts = t.crosses_hosts || nodes_of_group[id].size() > 1;
    t.groups.push_back(std::move(g));
  }
  return t;
}

namespace {

// Eager launches whose records came back: each gap before such an op split at its launch
// call's return, and the cause the larger part names.
void split_by_launches(const PointAnalysis& a, IdleSplitRecord& r) {
  r.launches_fraction = a.idle_launch_fraction;
  r.kernel_boundaries_fraction = a.idle_boundary_fraction;
  const bool launches = a.idle_launch_fraction > a.idle_boundary_fraction;
  r.in_steps_cause = launches ? "launches" : "kernel_boundaries";
  r.basis = fmt::format(
      "eager launches, {} with their launch call's record: a gap before such an op is split where "
      "that call returned, the device waiting for the host before it ({:.1f}% of wall) and "
      "sitting at a kernel boundary after it ({:.1f}%); the other {:.1f}% inside the steps "
      "(before stamped collectives, at step ends) is in neither",
      a.launch_records, 100 * a.idle_launch_fraction, 100 * a.idle_boundary_fraction,
      100 * std::max(0.0,
                     a.idle_in_steps_fraction - a.idle_launch_fraction - a.idle_boundary_fraction));
}

// What the idle inside a step is on this device. Under a CUDA graph the whole step is one
// replay, so no kernel waits for a host launch; eagerly, launch time and the device's own
// boundaries fall in the same gaps, told apart where the launches' records came back.
IdleSplitRecord idle_split_record(const PointAnalysis& a, const RunSpec& spec,
                                  const DeviceCaps& caps) {
  IdleSplitRecord r{a.idle_in_steps_fraction, a.idle_between_steps_fraction, "unattributed",
                    "the backend does not say what runs between its ops"};
  if (caps.host_compute) {
    r.in_steps_cause = "host_work";
    r.basis = "ops run on the host thread: the gaps are the harness's own work between ops";
  } else if (spec.cuda_graph) {
    r.in_steps_cause = "kernel_boundaries";
    r.basis = "each step is one CUDA-graph replay: no kernel waits for a host launch";
  } else if (caps.device_timer && a.launch_records > 0) {
    split_by_launches(a, r);
  } else if (caps.device_timer) {
    r.in_steps_cause = "launches_or_kernel_boundaries";
    r.basis =
        "eager launches: host launch time and idle at kernel boundaries share the gaps; the "
        "same point under --cuda-graph keeps only the second";
  }
  return r;
}

// What straggler_cause reads of one rank: the analysis's per-op times and idle per measured
// step, and the counters the rank measured about itself.
CauseRank cause_rank(const RankMetrics& m, const RankRecord& r) {
  CauseRank c;
  c.rank = m.rank;
  c.group = m.group;
  const double steps = std::max(m.measured_steps, 1);
  for (std::size_t o = 0; o < kOpCount; ++o) c.op_s_per_step[o] = m.op_s[o] / steps;
  c.outside_ops_s_per_step = m.host_gap_fraction * m.wall_s / steps;
  if (r.host_thread) c.descheduled_fraction = r.host_thread->descheduled_fraction;
  const auto& t = r.telemetry;
  if (t.is_object() && t.value("available", false) && t.contains("sm_clock_mhz") &&
      t["sm_clock_mhz"].is_object() &&
      t["sm_clock_mhz"].value("mean", nlohmann::ordered_json()).is_number())
    c.sm_clock_mhz = t["sm_clock_mhz"]["mean"].get<double>();
  if (t.is_object() && t.contains("throttle_reasons") && t["throttle_reasons"].is_array())
    for (const auto& x : t["throttle_reasons"])
      if (x.is_string()) c.throttle_reasons.push_back(x.get<std::string>());
  c.device = r.device;
  return c;
}

StragglerCauseRecord cause_record(const PointAnalysis& a, int subject,
                                  const std::vector<RankRecord>& ranks, const StepCost& cost,
                                  const Peaks& peaks) {
  CauseInput in;
  in.straggler = subject;
  in.ridge = peaks.bw > 0 ? peaks.flops / peaks.bw : 0;
  for (std::size_t i = 0; i < a.ranks.size() && i < ranks.size(); ++i)
    in.ranks.push_back(cause_rank(a.ranks[i], ranks[i]));
  for (const auto* list : {&cost.layer_ops, &cost.tail_ops})
    for (const OpCost& c : *list) {
      const auto o = static_cast<std::size_t>(c.op);
      const double bytes = c.bytes_read + c.bytes_written;
      in.priced[o] = true;
      in.intensity[o] = bytes > 0 ? c.flops / bytes : 0;
    }
  const StragglerCause c = straggler_cause(in);
  return {in.straggler,
          c.kind,
          c.text,
          c.compute_excess_s,
          c.outside_ops_excess_s,
          c.memory_bound_ratio,
          c.flop_bound_ratio,
          c.top_op,
          c.top_op_share,
          c.evidence};
}

// The arrival straggler, or none where the clocks cannot tell who arrived last (its rank,
// costliest rank and cause are then null, and `reason` says so with the uncertainty).
StragglerRecord straggler_record(const PointAnalysis& a, const std::vector<RankRecord>& ranks,
                                 const StepCost& cost, const Peaks& peaks) {
  const Straggler& s = a.straggler;
  StragglerRecord r;
  if (s.rank >= 0) r.rank = s.rank;
  r.arrived_last_share = s.arrived_last_share;
  r.excess_compute_fraction = s.excess_compute_fraction;
  r.median = "lower median of the rank's TP group";
  r.caused_wait_share = s.caused_wait_share;
  r.costliest_share = s.costliest_share;
  if (s.costliest_rank >= 0) r.costliest_rank = s.costliest_rank;
  // Where no rank is named, the busiest one's cause says whether any rank has excess time.
  const int subject = s.costliest_rank >= 0 ? s.costliest_rank : s.busiest_rank;
  if (subject >= 0) r.cause = cause_record(a, subject, ranks, cost, peaks);
  if (s.arrived_last_share > 0) r.lead_s = s.lead_s;
  if (s.within_uncertainty)
    r.reason = fmt::format(
        "within clock uncertainty (±{:.1f} us): no rank's last arrivals lead "
        "the next by more than it",
        a.collectives.skew_uncertainty_s * 1e6);
  return r;
}

}  // namespace

PointRecord ok_point(const RunSpec& spec, int64_t layers, const StepCost& cost, const Peaks& peaks,
                     const PointAnalysis& a, const std::vector<RankSample>& samples,
                     const DeviceCaps& caps) {
  PointRecord p;
  p.params = params_record(spec, layers);
  p.status = PointStatus::ok;
  p.metrics = metrics_record(a, cost, peaks);
  p.metrics->idle_split = idle_split_record(a, spec, caps);
  p.cost = cost_record(cost);
  p.ops = op_records(a, cost, peaks, static_cast<double>(layers));
  p.collectives = collectives_record(a.collectives);
  p.ranks.emplace();
  for (const auto& r : a.ranks)
    p.ranks->push_back(rank_record(r, samples[static_cast<std::size_t>(r.rank)]));
  p.straggler = straggler_record(a, *p.ranks, cost, peaks);
  p.clock_sync = clock_sync_record(samples, a.clock_condition_violations);
  p.verification = verification_record(spec, layers, samples);
  p.warnings = warnings(cost, peaks, a, samples, caps);
  if (caps.fused_elementwise && spec.stamps == StampLevel::collectives)
    p.warnings->push_back(
        "fused_ops: residual_attn runs inside rmsnorm_mlp, each layer's residual_mlp but the "
        "last inside the next layer's rmsnorm_attn, and kv_write inside rope (one kernel each "
        "under --stamps collectives): their times are in those rows of ops[]");
  if (!spec.hardware_note.empty()) p.warnings->push_back(spec.hardware_note);
  p.warnings->insert(p.warnings->end(), spec.shape.notes.begin(), spec.shape.notes.end());
  if (spec.layers_auto && layers < spec.shape.n_layers)
    p.warnings->push_back(fmt::format(
        "layers_reduced: --layers auto ran {} of the model's {} layers to fit the memory budget; "
        "step time, tokens/s, MBU and MFU are those of {} layers, and a whole-model figure "
        "scaled from them (x{:.3g}) would be an extrapolation, not a measurement",
        layers, spec.shape.n_layers, layers,
        static_cast<double>(spec.shape.n_layers) / static_cast<double>(layers)));
  p.samples = SamplesRecord{a.step_time_s, a.collectives.skew_s};
  p.tp_placement = tp_placement(*p.ranks);
  return p;
}

void attach_op_pricing(std::vector<OpRecord>& ops, const OpPricingMap& m) {
  for (OpRecord& o : ops)
    if (const auto it = m.find(o.op); it != m.end()) {
      o.priced_by = it->second.table;
      o.table_coverage = it->second.coverage;
    }
}

}  // namespace tpb
