// Each record's fields are listed once, in schema order, by a fields() function that a writer
// and a reader both walk; so the two directions cannot drift apart and a field is added in
// one line.
#include "harness/record/json/results_json.h"

#include <array>
#include <cmath>

#include "base/enum_names.h"
#include "base/errors.h"
#include "harness/record/curve_record.h"
#include "harness/record/json/json_number.h"
#include "harness/record/json/results_json_visit.h"

namespace tpb {

namespace {

template <class V, Is<PointParams> R>
void fields(V& v, R& r) {
  v("phase", r.phase);
  v("batch", r.batch);
  v("context", r.context);
  v("prompt", r.prompt);
  v("tp", r.tp);
  v("dtype", r.dtype);
  v("weight_dtype", r.weight_dtype);
  v("activation_dtype", r.activation_dtype);
  v("kv_dtype", r.kv_dtype);
  v("allreduce_dtype", r.allreduce_dtype);
  v("backend", r.backend);
  v("collective", r.collective);
  v("mpi_mode", r.mpi_mode);
  v("topology", r.topology);
  v("inject", r.inject);
  v("model", r.model);
  v("layers", r.layers);
  v("steps", r.steps);
  v("warmup", r.warmup);
  v("tp_groups", r.tp_groups);
  v("lm_head", r.lm_head);
  v("stamps", r.stamps);
  v("serve", r.serve);
}

template <class V, Is<ServeParamsRecord> R>
void fields(V& v, R& r) {
  v("load", r.load);
  v("x", r.x);
  v("concurrency", r.concurrency);
  v("rate", r.rate);
  v("burstiness", r.burstiness);
  v("requests", r.requests);
  v("warmup_requests", r.warmup_requests);
  v("prompt_len", r.prompt_len);
  v("output_len", r.output_len);
  v("trace", r.trace);
  v("scheduler", r.scheduler);
  v("chunk", r.chunk);
  v("max_batch", r.max_batch);
  v("max_step_tokens", r.max_step_tokens);
  v("kv_capacity_tokens", r.kv_capacity_tokens);
  v("block_tokens", r.block_tokens);
  v("host_overhead_us", r.host_overhead_us);
  v("lm_head", r.lm_head);
  v("slo", r.slo);
  v("clock", r.clock);
}

template <class V, Is<LatencyStats> R>
void fields(V& v, R& r) {
  v("mean", r.mean);
  v("p50", r.p50);
  v("p90", r.p90);
  v("p95", r.p95);
  v("p99", r.p99);
  v("max", r.max);
  v("n", r.n);
  v("std", r.std);
}

template <class V, Is<Goodput> R>
void fields(V& v, R& r) {
  v("slo", r.slo);
  v("requests_per_s", r.requests_per_s);
  v("fraction", r.fraction);
}

template <class V, Is<CostPerMtok> R>
void fields(V& v, R& r) {
  v("output_usd", r.output_usd);
  v("total_usd", r.total_usd);
  v("gpus", r.gpus);
  v("usd_per_gpu_hour", r.usd_per_gpu_hour);
  v("gpu", r.gpu);
  v("price_source", r.price_source);
  v("reason", r.reason);
}

template <class V, Is<IdleSplitRecord> R>
void fields(V& v, R& r) {
  v("in_steps_fraction", r.in_steps_fraction);
  v("between_steps_fraction", r.between_steps_fraction);
  v("in_steps_cause", r.in_steps_cause);
  v("basis", r.basis);
  v("launches_fraction", r.launches_fraction);
  v("kernel_boundaries_fraction", r.kernel_boundaries_fraction);
}

template <class V, Is<ItlSharesRecord> R>
void fields(V& v, R& r) {
  v("prefill", r.prefill);
  v("imbalance", r.imbalance);
  v("host", r.host);
  v("transfer", r.transfer);
  v("bandwidth", r.bandwidth);
  v("jitter", r.jitter);
}

template <class V, Is<GapPartsRecord> R>
void fields(V& v, R& r) {
  v("prefill", r.prefill);
  v("imbalance", r.imbalance);
  v("host", r.host);
  v("transfer", r.transfer);
  v("bandwidth", r.bandwidth);
  v("jitter", r.jitter);
  v("between_steps", r.between_steps);
}

template <class V, Is<PrefillRowRecord> R>
void fields(V& v, R& r) {
  v("request", r.request);
  v("tokens", r.tokens);
  v("cached", r.cached);
}

template <class V, Is<LateTokenRecord> R>
void fields(V& v, R& r) {
  v("request", r.request);
  v("token", r.token);
  v("step", r.step);
  v("tokens", r.tokens);
  v("gap_s", r.gap_s);
  v("part", r.part);
  v("part_s", r.part_s);
  v("rank", r.rank);
  v("parts_s", r.parts_s);
  v("prefilled", r.prefilled);
  v("prefill_requests", r.prefill_requests);
  v("skipped_steps", r.skipped_steps);
  v("preemptions", r.preemptions);
}

template <class V, Is<ItlAttributionRecord> R>
void fields(V& v, R& r) {
  v("tail", r.tail);
  v("threshold_s", r.threshold_s);
  v("samples", r.samples);
  v("excess_s", r.excess_s);
  v("shares", r.shares);
  v("decode_step_p50_s", r.decode_step_p50_s);
  v("prefill_step_p50_s", r.prefill_step_p50_s);
  v("method", r.method);
  v("worst", r.worst);
}

template <class V, Is<ServeRunRecord> R>
void fields(V& v, R& r) {
  v("steps", r.steps);
  v("requests_completed", r.requests_completed);
  v("requests_rejected", r.requests_rejected);
  v("preemptions", r.preemptions);
  v("duration_s", r.duration_s);
  v("max_running", r.max_running);
  v("max_waiting", r.max_waiting);
  v("kv_capacity_tokens", r.kv_capacity_tokens);
  v("kv_peak_tokens", r.kv_peak_tokens);
  v("kv_full_steps", r.kv_full_steps);
  v("prefill_steps", r.prefill_steps);
  v("busy_s", r.busy_s);
  v("host_gap_s", r.host_gap_s);
  v("steps_file", r.steps_file);
  v("requests_file", r.requests_file);
  v("token_times_limit", r.token_times_limit);
  v("input_tokens", r.input_tokens);
  v("output_tokens", r.output_tokens);
}

template <class V, Is<MemoryRecord> R>
void fields(V& v, R& r) {
  v("need_bytes", r.need_bytes);
  v("have_bytes", r.have_bytes);
}

template <class V, Is<StepTimeRecord> R>
void fields(V& v, R& r) {
  v("p50", r.p50);
  v("p95", r.p95);
  v("p99", r.p99);
  v("mean", r.mean);
  v("min", r.min);
  v("max", r.max);
  v("n", r.n);
}

template <class V, Is<PeaksRecord> R>
void fields(V& v, R& r) {
  v("flops", r.flops);
  v("bw", r.bw);
  v("source", r.source);
}

template <class V, Is<MinMeanMax> R>
void fields(V& v, R& r) {
  v("min", r.min);
  v("mean", r.mean);
  v("max", r.max);
}

template <class V, Is<AcrossRanksRecord> R>
void fields(V& v, R& r) {
  v("busy_fraction", r.busy_fraction);
  v("useful_fraction", r.useful_fraction);
  v("occupancy_sampled", r.occupancy_sampled);
  v("host_gap_fraction", r.host_gap_fraction);
  v("mbu", r.mbu);
  v("mfu", r.mfu);
  v("compute_s", r.compute_s);
  v("wait_s", r.wait_s);
  v("transfer_s", r.transfer_s);
}

template <class V, Is<MetricsRecord> R>
void fields(V& v, R& r) {
  v("step_time_s", r.step_time_s);
  v("tokens_per_s", r.tokens_per_s);
  v("mbu", r.mbu);
  v("mfu", r.mfu);
  v("mbu_compute", r.mbu_compute);
  v("mfu_compute", r.mfu_compute);
  v("mfu_ceiling", r.mfu_ceiling);
  v("mfu_ceiling_ops", r.mfu_ceiling_ops);
  v("intensity", r.intensity);
  v("ridge", r.ridge);
  v("roofline_fraction", r.roofline_fraction);
  v("busy_fraction", r.busy_fraction);
  v("useful_fraction", r.useful_fraction);
  v("occupancy_sampled", r.occupancy_sampled);
  v("host_gap_fraction", r.host_gap_fraction);
  v("idle_split", r.idle_split);
  v("peaks", r.peaks);
  v("across_ranks", r.across_ranks);
  v("ttft_s", r.ttft_s);
  v("ttft_admitted_s", r.ttft_admitted_s);
  v("tpot_s", r.tpot_s);
  v("itl_s", r.itl_s);
  v("e2el_s", r.e2el_s);
  v("queue_s", r.queue_s);
  v("decode_s", r.decode_s);
  v("output_tokens_per_s", r.output_tokens_per_s);
  v("total_tokens_per_s", r.total_tokens_per_s);
  v("request_throughput", r.request_throughput);
  v("goodput", r.goodput);
  v("cost_per_mtok", r.cost_per_mtok);
  v("itl_attribution", r.itl_attribution);
}

template <class V, Is<CostRecord> R>
void fields(V& v, R& r) {
  v("scope", r.scope);
  v("flops", r.flops);
  v("bytes_read", r.bytes_read);
  v("bytes_written", r.bytes_written);
  v("weight_bytes", r.weight_bytes);
  v("kv_read_bytes", r.kv_read_bytes);
  v("kv_write_bytes", r.kv_write_bytes);
  v("activation_bytes", r.activation_bytes);
  v("comm_bytes", r.comm_bytes);
  v("collectives_per_step", r.collectives_per_step);
  v("tokens", r.tokens);
}

template <class V, Is<OpRecord> R>
void fields(V& v, R& r) {
  v("op", r.op);
  v("time_s_per_step", r.time_s_per_step);
  v("share_of_step", r.share_of_step);
  v("bytes_per_step", r.bytes_per_step);
  v("flops_per_step", r.flops_per_step);
  v("achieved_bw", r.achieved_bw);
  v("mbu", r.mbu);
  v("priced_by", r.priced_by);
  v("table_coverage", r.table_coverage);
}

template <class V, Is<CollectivesRecord> R>
void fields(V& v, R& r) {
  v("count", r.count);
  v("skew_s", r.skew_s);
  v("wait_fraction", r.wait_fraction);
  v("transfer_s_total", r.transfer_s_total);
  v("wait_s_total", r.wait_s_total);
  v("skew_uncertainty_s", r.skew_uncertainty_s);
  v("unresolved_arrivals", r.unresolved_arrivals);
}

template <class V, Is<MemContendRecord> R>
void fields(V& v, R& r) {
  v("where", r.where);
  v("buffer_bytes", r.buffer_bytes);
  v("bytes_moved", r.bytes_moved);
  v("GBps", r.GBps);
}

template <class V, Is<HostThreadRecord> R>
void fields(V& v, R& r) {
  v("wall_s", r.wall_s);
  v("cpu_s", r.cpu_s);
  v("descheduled_fraction", r.descheduled_fraction);
  v("involuntary_switches", r.involuntary_switches);
}

template <class V, Is<RankClockRecord> R>
void fields(V& v, R& r) {
  v("offset_start_s", r.offset_start_s);
  v("offset_end_s", r.offset_end_s);
  v("uncertainty_s", r.uncertainty_s);
  v("drift_ppm", r.drift_ppm);
  v("device_uncertainty_s", r.device_uncertainty_s);
}

template <class V, Is<RankRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("host", r.host);
  v("node", r.node);
  v("device", r.device);
  v("group", r.group);
  v("group_rank", r.group_rank);
  v("wall_s", r.wall_s);
  v("compute_s", r.compute_s);
  v("injected_s", r.injected_s);
  v("wait_s", r.wait_s);
  v("transfer_s", r.transfer_s);
  v("busy_fraction", r.busy_fraction);
  v("useful_fraction", r.useful_fraction);
  v("host_gap_fraction", r.host_gap_fraction);
  v("occupancy_sampled", r.occupancy_sampled);
  v("step_time_p50_s", r.step_time_p50_s);
  v("mbu", r.mbu);
  v("mfu", r.mfu);
  v("mbu_compute", r.mbu_compute);
  v("mfu_compute", r.mfu_compute);
  v("arrived_last", r.arrived_last);
  v("caused_wait_s", r.caused_wait_s);
  v("collectives", r.collectives);
  v("clock_condition_violations", r.clock_condition_violations);
  v("inject", r.inject);
  v("mem_contend", r.mem_contend);
  v("host_thread", r.host_thread);
  v("memory", r.memory);
  v("clock", r.clock);
  v("telemetry", r.telemetry);
  v("kernel_choices", r.kernel_choices);
}

template <class V, Is<StragglerRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("arrived_last_share", r.arrived_last_share);
  v("excess_compute_fraction", r.excess_compute_fraction);
  v("median", r.median);
  v("caused_wait_share", r.caused_wait_share);
  v("costliest_rank", r.costliest_rank);
  v("costliest_share", r.costliest_share);
  v("cause", r.cause);
  v("lead_s", r.lead_s);
  v("reason", r.reason);
}

template <class V, Is<StragglerCauseRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("kind", r.kind);
  v("text", r.text);
  v("compute_excess_s", r.compute_excess_s);
  v("outside_ops_excess_s", r.outside_ops_excess_s);
  v("memory_bound_ratio", r.memory_bound_ratio);
  v("flop_bound_ratio", r.flop_bound_ratio);
  v("top_op", r.top_op);
  v("top_op_share", r.top_op_share);
  v("evidence", r.evidence);
}

template <class V, Is<ClockSyncRecord> R>
void fields(V& v, R& r) {
  clock_sync_fields(v, r);
  v("offsets_s", r.offsets_s);
}

template <class V, Is<ShardedCheckRecord> R>
void fields(V& v, R& r) {
  v("max_abs_err", r.max_abs_err);
  v("tolerance", r.tolerance);
  v("passed", r.passed);
  v("tokens_match", r.tokens_match);
}

template <class V, Is<VerificationRecord> R>
void fields(V& v, R& r) {
  v("max_abs_err", r.max_abs_err);
  v("tolerance", r.tolerance);
  v("passed", r.passed);
  v("reference", r.reference);
  v("tokens_match", r.tokens_match);
  v("max_abs_ref", r.max_abs_ref);
  v("tolerance_rule", r.tolerance_rule);
  v("tokens_near_tie", r.tokens_near_tie);
  v("sharded_vs_unsharded", r.sharded_vs_unsharded);
}

template <class V, Is<SamplesRecord> R>
void fields(V& v, R& r) {
  v("step_time_s", r.step_time_s);
  v("skew_s", r.skew_s);
}

template <class V, Is<CurvePointRecord> R>
void fields(V& v, R& r) {
  v("x", r.x);
  v("total_tokens_per_s", r.total_tokens_per_s);
  v("itl_p95_s", r.itl_p95_s);
  v("ttft_p95_s", r.ttft_p95_s);
  v("status", r.status);
  v("cost_per_mtok", r.cost_per_mtok);
}

template <class V, Is<FreeRegionRecord> R>
void fields(V& v, R& r) {
  v("upto", r.upto);
  v("threshold", r.threshold);
  v("meaning", r.meaning);
}

template <class V, Is<KneeRecord> R>
void fields(V& v, R& r) {
  v("x", r.x);
  v("method", r.method);
}

template <class V, Is<MemoryWallRecord> R>
void fields(V& v, R& r) {
  v("x", r.x);
  v("reason", r.reason);
}

template <class V, Is<SloCapacityRecord> R>
void fields(V& v, R& r) {
  v("slo", r.slo);
  v("target", r.target);
  v("x", r.x);
  v("attainment", r.attainment);
  v("goodput_requests_per_s", r.goodput_requests_per_s);
  v("goodput_per_gpu", r.goodput_per_gpu);
  v("next_x", r.next_x);
  v("next_attainment", r.next_attainment);
  v("cost_per_mtok", r.cost_per_mtok);
  v("meaning", r.meaning);
}

template <class V, Is<CurveRecord> R>
void fields(V& v, R& r) {
  v("x", r.x);
  v("points", r.points);
  v("free_region", r.free_region);
  v("knee", r.knee);
  v("memory_wall", r.memory_wall);
  v("slo_capacity", r.slo_capacity);
}

template <class V, Is<TpGroupHostsRecord> R>
void fields(V& v, R& r) {
  v("group", r.group);
  v("ranks", r.ranks);
  v("hosts", r.hosts);
}

template <class V, Is<TpPlacementRecord> R>
void fields(V& v, R& r) {
  v("hosts", r.hosts);
  v("crosses_hosts", r.crosses_hosts);
  v("groups", r.groups);
}

template <class V, Is<PointRecord> R>
void fields(V& v, R& r) {
  v("params", r.params);
  v("status", r.status);
  v("reason", r.reason);
  v("memory", r.memory);
  v("metrics", r.metrics);
  v("cost", r.cost);
  v("ops", r.ops);
  v("collectives", r.collectives);
  v("ranks", r.ranks);
  v("straggler", r.straggler);
  v("clock_sync", r.clock_sync);
  v("verification", r.verification);
  v("warnings", r.warnings);
  v("samples", r.samples);
  v("trace", r.trace);
  v("memory_exhaustion", r.memory_exhaustion);
  v("serve", r.serve);
  v("tp_placement", r.tp_placement);
}

}  // namespace

namespace {
constexpr std::array<const char*, 4> kPointStatusNames{"ok", "oom", "skipped", "error"};
}  // namespace

const char* point_status_name(PointStatus s) {
  return enum_name(kPointStatusNames, s);
}

PointStatus point_status_from_name(const std::string& name) {
  if (auto s = enum_from_name<PointStatus>(kPointStatusNames, name)) return *s;
  throw BadInput("unknown point status '" + name + "' (expected ok, oom, skipped or error)");
}

TPB_RECORD_JSON(PointRecord, point_from_json, "point")
TPB_RECORD_JSON(RankRecord, rank_from_json, "rank")
TPB_RECORD_JSON(PointParams, params_from_json, "params")

std::optional<PointRecord> try_point_from_json(const oj& j) {
  return try_read_record<PointRecord>(j, "point");
}

oj to_json(const CurveRecord& c) {
  oj j = Writer::encode(c);
  if (!c.memory_wall) j["memory_wall"] = nullptr;  // the schema's "no wall": null, not absent
  return j;
}
CurveRecord curve_from_json(const oj& j) {
  oj in = j;
  if (in.contains("memory_wall") && in["memory_wall"].is_null()) in.erase("memory_wall");
  return read_record<CurveRecord>(in, "curve");
}
const char* curve_section() {
  return "curve";
}

std::vector<std::pair<std::string, std::string>> param_texts(const PointParams& p) {
  std::vector<std::pair<std::string, std::string>> out;
  const oj j = to_json(p);  // items() does not own it
  for (const auto& [k, v] : j.items()) {
    std::string text;
    if (v.is_string()) {
      text = v.get<std::string>();
    } else if (v.is_array()) {
      for (const auto& e : v)
        text += (text.empty() ? "" : ",") + (e.is_string() ? e.get<std::string>() : e.dump());
      if (text.empty()) text = "none";
    } else {
      text = v.dump();
    }
    out.emplace_back(k, std::move(text));
  }
  return out;
}

bool param_in_point_title(const std::string& key) {
  for (const char* k :
       {"model", "phase", "batch", "context", "prompt", "tp", "dtype", "backend", "serve"})
    if (key == k) return true;
  return false;
}

PointHead point_head_from_json(const oj& j) {
  PointHead h;
  if (!j.is_object()) return h;
  const auto string_at = [](const oj& o, const char* k, std::string& out) {
    if (o.contains(k) && o[k].is_string()) out = o[k].get<std::string>();
  };
  const auto integer_at = [](const oj& o, const char* k, int64_t& out) {
    if (o.contains(k) && o[k].is_number()) out = o[k].get<int64_t>();
  };
  const char* params = key_of(&PointRecord::params);
  if (j.contains(params) && j[params].is_object()) h.params = j[params];
  string_at(j, key_of(&PointRecord::status), h.status);
  string_at(j, key_of(&PointRecord::reason), h.reason);
  string_at(h.params, key_of(&PointParams::phase), h.phase);
  integer_at(h.params, key_of(&PointParams::batch), h.batch);
  integer_at(h.params, key_of(&PointParams::tp), h.tp);
  return h;
}

bool param_omitted_from_heading(const std::string& key) {
  return key == "model" || key == "steps" || key == "warmup" || key == "iters" ||
         key == "warmup_iters";
}

}  // namespace tpb
