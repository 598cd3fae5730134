// Point records. Field names follow the results contract; additions are documented in
// results/SCHEMA.md.
#include "harness/record/point_json.h"

#include <algorithm>
#include <cmath>

#include "harness/analysis/stats.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

oj step_stats_json(const Summary& s) {
  return oj{{"p50", s.p50}, {"p95", s.p95}, {"p99", s.p99}, {"mean", s.mean},
            {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

template <class F>
oj across(const std::vector<RankMetrics>& ranks, F f) {
  std::vector<double> v;
  for (const auto& r : ranks) v.push_back(f(r));
  return mmm_to_json(min_mean_max(v));
}

// Per-op time next to the op's cost-model bytes and FLOPs, so a slow op can be judged by its
// own bandwidth, not only by its share of the step (what Nsight's kernel table lacks).
oj ops_json(const PointAnalysis& a, const StepCost& cost, const Peaks& peaks, double layers) {
  oj ops = oj::array();
  for (std::size_t o = 0; o < static_cast<std::size_t>(Op::count); ++o) {
    const Op op = static_cast<Op>(o);
    if (op == Op::step) continue;
    double sum = 0;
    int n = 0;
    for (const auto& r : a.ranks)
      if (r.measured_steps > 0) sum += r.op_s[o] / r.measured_steps, ++n;
    const double per_step = n ? sum / n : 0;
    if (per_step <= 0) continue;
    oj j;
    j["op"] = op_name(op);
    j["time_s_per_step"] = per_step;
    j["share_of_step"] = a.step_time.mean > 0 ? per_step / a.step_time.mean : 0;
    for (const auto& c : cost.layer_ops)
      if (c.op == op && per_step > 0) {
        const double bytes = (c.bytes_read + c.bytes_written) * layers;
        j["bytes_per_step"] = bytes;
        j["flops_per_step"] = c.flops * layers;
        j["achieved_bw"] = bytes / per_step;
        j["mbu"] = peaks.bw > 0 ? bytes / per_step / peaks.bw : 0;
      }
    ops.push_back(j);
  }
  return ops;
}

// A CPU rank computes and waits (yielding) on its own thread the whole time, so time that
// thread was off a core is the scheduler's. Above 5% the timings mix the benchmark with the
// other runnable threads; ARCHITECTURE: oversubscribed runs are for function, not
// performance. Not applied to GPU backends, whose host thread may block in a synchronize.
std::string time_sliced_warning(const std::vector<oj>& rank_info, const DeviceCaps& caps) {
  if (caps.backend != "cpu") return "";
  constexpr double kLimit = 0.05;
  double worst = 0;
  int worst_rank = -1, over = 0;
  int64_t switches = 0;
  for (const auto& info : rank_info) {
    if (!info.contains("host_thread")) continue;
    const double f = info["host_thread"]["descheduled_fraction"].get<double>();
    switches += info["host_thread"]["involuntary_switches"].get<int64_t>();
    if (f > kLimit) ++over;
    if (f > worst) worst = f, worst_rank = info["rank"].get<int>();
  }
  if (over == 0) return "";
  return "time_sliced: " + std::to_string(over) + " rank(s) were off a core for more than 5% of " +
         "the measured steps (worst rank " + std::to_string(worst_rank) + ": " +
         std::to_string(static_cast<int>(std::lround(worst * 100))) + "%; " +
         std::to_string(switches) +
         " involuntary context switches in all): more runnable threads than cores, so compute, "
         "wait and skew include the scheduler's time";
}

}  // namespace

oj params_json(const RunSpec& spec, int64_t layers) {
  oj p;
  p["phase"] = phase_name(spec.phase);
  p["batch"] = spec.batch;
  p["context"] = spec.phase == Phase::decode ? spec.context : 0;
  p["prompt"] = spec.phase == Phase::prefill ? spec.prompt : 0;
  p["tp"] = spec.tp;
  p["dtype"] = dtype_name(spec.dtype);
  p["backend"] = spec.backend;
  p["collective"] = spec.collective;
  p["topology"] = spec.topology;
  p["inject"] = spec.inject_text;
  p["model"] = spec.shape.name;
  p["layers"] = layers;
  p["steps"] = spec.steps;
  p["warmup"] = spec.warmup;
  p["tp_groups"] = spec.tp_groups;
  return p;
}

oj oom_point_json(const RunSpec& spec, int64_t layers, double need_bytes, double have_bytes) {
  oj p;
  p["params"] = params_json(spec, layers);
  p["status"] = "oom";
  p["reason"] = "KV cache + weights + activations need " +
                std::to_string(need_bytes / 1073741824.0) +
                " GiB per rank; the smallest rank budget in the job is " +
                std::to_string(have_bytes / 1073741824.0) + " GiB";
  p["memory"] = {{"need_bytes", need_bytes}, {"have_bytes", have_bytes}};
  return p;
}

oj error_point_json(const RunSpec& spec, const std::string& reason) {
  oj p;
  p["params"] = params_json(spec, spec.layers);
  p["status"] = "error";
  p["reason"] = reason;
  return p;
}

oj cost_json(const StepCost& c) {
  oj j;
  j["scope"] = "per rank, per step (all layers)";
  j["flops"] = c.flops;
  j["bytes_read"] = c.bytes_read;
  j["bytes_written"] = c.bytes_written;
  j["weight_bytes"] = c.weight_bytes;
  j["kv_read_bytes"] = c.kv_read_bytes;
  j["kv_write_bytes"] = c.kv_write_bytes;
  j["activation_bytes"] = c.activation_bytes;
  j["comm_bytes"] = c.comm_bytes;
  j["collectives_per_step"] = c.comm.size();
  j["tokens"] = c.tokens;
  return j;
}

oj ok_point_json(const RunSpec& spec, int64_t layers, const StepCost& cost, const Peaks& peaks,
                 const PointAnalysis& a, const std::vector<oj>& rank_info, const DeviceCaps& caps) {
  oj p;
  p["params"] = params_json(spec, layers);
  p["status"] = "ok";
  p["reason"] = "";

  oj m;
  m["step_time_s"] = step_stats_json(a.step_time);
  m["tokens_per_s"] = a.tokens_per_s;
  m["mbu"] = a.mbu;
  m["mfu"] = a.mfu;
  m["mbu_compute"] = a.mbu_compute;
  m["mfu_compute"] = a.mfu_compute;
  m["mfu_ceiling"] = a.mfu_ceiling;
  m["intensity"] = a.intensity;
  m["ridge"] = a.ridge;
  m["roofline_fraction"] = a.roofline_fraction;
  m["busy_fraction"] = a.busy_fraction;
  m["useful_fraction"] = a.useful_fraction;
  m["occupancy_sampled"] = a.occupancy_sampled;
  m["host_gap_fraction"] = a.host_gap_fraction;
  m["peaks"] = {{"flops", peaks.flops}, {"bw", peaks.bw}, {"source", peaks.source}};
  m["across_ranks"] = {
      {"busy_fraction", across(a.ranks, [](const RankMetrics& r) { return r.busy_fraction; })},
      {"useful_fraction", across(a.ranks, [](const RankMetrics& r) { return r.useful_fraction; })},
      {"occupancy_sampled",
       across(a.ranks, [](const RankMetrics& r) { return r.occupancy_sampled; })},
      {"host_gap_fraction",
       across(a.ranks, [](const RankMetrics& r) { return r.host_gap_fraction; })},
      {"mbu", across(a.ranks, [](const RankMetrics& r) { return r.mbu; })},
      {"mfu", across(a.ranks, [](const RankMetrics& r) { return r.mfu; })},
      {"compute_s", across(a.ranks, [](const RankMetrics& r) { return r.compute_s; })},
      {"wait_s", across(a.ranks, [](const RankMetrics& r) { return r.wait_s; })},
      {"transfer_s", across(a.ranks, [](const RankMetrics& r) { return r.transfer_s; })}};
  p["metrics"] = m;
  p["cost"] = cost_json(cost);
  p["ops"] = ops_json(a, cost, peaks, static_cast<double>(layers));

  oj c;
  c["count"] = a.collectives.count;
  c["skew_s"] = {{"p50", a.collectives.skew.p50},
                 {"p95", a.collectives.skew.p95},
                 {"max", a.collectives.skew.max}};
  c["wait_fraction"] = a.collectives.wait_fraction;
  c["transfer_s_total"] = a.collectives.transfer_s_total;
  c["wait_s_total"] = a.collectives.wait_s_total;
  p["collectives"] = c;

  oj ranks = oj::array();
  for (const auto& r : a.ranks) {
    const oj& info = rank_info[static_cast<std::size_t>(r.rank)];
    oj j;
    j["rank"] = r.rank;
    j["host"] = info["host"];
    j["device"] = info["device"];
    j["group"] = r.group;
    j["group_rank"] = r.group_rank;
    j["wall_s"] = r.wall_s;
    j["compute_s"] = r.compute_s;
    j["wait_s"] = r.wait_s;
    j["transfer_s"] = r.transfer_s;
    j["busy_fraction"] = r.busy_fraction;
    j["useful_fraction"] = r.useful_fraction;
    j["host_gap_fraction"] = r.host_gap_fraction;
    j["occupancy_sampled"] = r.occupancy_sampled;
    j["step_time_p50_s"] = r.step_time_p50_s;
    j["mbu"] = r.mbu;
    j["mfu"] = r.mfu;
    j["mbu_compute"] = r.mbu_compute;
    j["mfu_compute"] = r.mfu_compute;
    j["arrived_last"] = r.arrived_last;
    j["collectives"] = r.collectives;
    j["clock_condition_violations"] = r.clock_condition_violations;
    j["inject"] = info["inject"];
    if (info.contains("mem_contend")) j["mem_contend"] = info["mem_contend"];
    if (info.contains("host_thread")) j["host_thread"] = info["host_thread"];
    j["memory"] = info["memory"];
    j["clock"] = info["clock"];
    j["telemetry"] =
        info.contains("telemetry")
            ? info["telemetry"]
            : oj{{"available", false},
                 {"reason", "no device telemetry on the " + caps.backend + " backend"}};
    ranks.push_back(j);
  }
  p["ranks"] = ranks;
  p["straggler"] = {{"rank", a.straggler.rank},
                    {"arrived_last_share", a.straggler.arrived_last_share},
                    {"excess_compute_fraction", a.straggler.excess_compute_fraction},
                    {"median", "lower median of the rank's TP group"}};

  double max_off = 0, max_unc = 0, max_drift = 0;
  oj offsets = oj::array();
  for (const auto& info : rank_info) {
    const auto& ck = info["clock"];
    max_off = std::max({max_off, std::fabs(ck["offset_start_s"].get<double>()),
                        std::fabs(ck["offset_end_s"].get<double>())});
    max_unc = std::max(max_unc, ck["uncertainty_s"].get<double>());
    max_drift = std::max(max_drift, std::fabs(ck["drift_ppm"].get<double>()));
    offsets.push_back(ck["offset_start_s"]);
  }
  p["clock_sync"] = {
      {"method", "ping-pong to rank 0, min-RTT sample, start and end (linear drift)"},
      {"max_offset_s", max_off},
      {"max_uncertainty_s", max_unc},
      {"drift_ppm", max_drift},
      {"clock_condition_violations", a.clock_condition_violations},
      {"offsets_s", offsets}};

  // Verification: every verifier (group rank 0 of each TP group) must pass.
  bool any = false, passed = true;
  double err = 0, tol = 0;
  for (const auto& info : rank_info)
    if (info["is_verifier"].get<bool>()) {
      any = true;
      passed = passed && info["verification"]["passed"].get<bool>();
      err = std::max(err, info["verification"]["max_abs_err"].get<double>());
      tol = std::max(tol, info["verification"]["tolerance"].get<double>());
    }
  if (any)
    p["verification"] = {{"max_abs_err", err},
                         {"tolerance", tol},
                         {"passed", passed},
                         {"reference", "unsharded tp=1 step, same weights, KV cache and input"}};

  oj warnings = oj::array();
  const double working_set = cost.weight_bytes + cost.kv_read_bytes;
  if (caps.llc_bytes > 0 && working_set < 4 * caps.llc_bytes)
    warnings.push_back("cache_resident: per-rank working set " +
                       std::to_string(working_set / 1048576.0) + " MiB is under 4x the LLC (" +
                       std::to_string(caps.llc_bytes / 1048576.0) +
                       " MiB); MBU against DRAM peak is not meaningful");
  if (a.mbu > 1.0 || a.mfu > 1.0)
    warnings.push_back("peak_exceeded: the run beat its peaks (MBU " + std::to_string(a.mbu) +
                       ", MFU " + std::to_string(a.mfu) + "); the peaks (" + peaks.source +
                       ") understate this machine, e.g. a start-up probe taken under load");
  if (auto w = time_sliced_warning(rank_info, caps); !w.empty()) warnings.push_back(w);
  p["warnings"] = warnings;
  p["samples"] = {{"step_time_s", a.step_time_s}, {"skew_s", a.collectives.skew_s}};
  return p;
}

}  // namespace tpb
