// The figures are the records' own (a rank's MBU, the point's p95 step time); the ratios
// formed here are a rank's wait fraction, wait_s / wall_s, the per-rank form of the point's
// collectives.wait_fraction (Σ wait / Σ wall over ranks), and its caused wait share,
// caused_wait_s / its group's Σ wait_s, the per-rank form of straggler.caused_wait_share.
#include "harness/report/export/export_table.h"

#include <cmath>
#include <map>
#include <optional>

#include "harness/report/export/openmetrics.h"

namespace tpb {

namespace {

// Indices into metric_families(), in its order.
enum Family : std::size_t {
  kMbu,
  kMfu,
  kMfuCeiling,
  kOccupancy,
  kBusy,
  kWait,
  kStep,
  kTokens,
  kItl,
  kTtft,
  kTpot,
  kE2el,
  kQueue,
  kPrefill,
  kDecode,
  kGoodput,
  kGoodputFraction,
  kCostOutput,
  kCostTotal,
  kCollTime,
  kCollBusbw,
  kCollLag,
  kCausedWait,
  kFamilies
};

void add(std::vector<MetricValue>& out, std::size_t family, double v, std::string suffix = "",
         std::string quantile = "") {
  if (std::isnan(v)) return;  // null in the results: no sample, not 0
  out.push_back({family, std::move(suffix), std::move(quantile), v});
}

// A summary's quantiles with its _count and _sum (mean × n, the count's total).
void add_summary(std::vector<MetricValue>& out, std::size_t family,
                 const std::vector<std::pair<const char*, double>>& quantiles, double mean,
                 int64_t n) {
  for (const auto& [q, v] : quantiles) add(out, family, v, "", q);
  if (n <= 0) return;
  add(out, family, static_cast<double>(n), "_count");
  add(out, family, mean * static_cast<double>(n), "_sum");
}

void add_latency(std::vector<MetricValue>& out, std::size_t family,
                 const std::optional<LatencyStats>& l) {
  if (!l) return;
  add_summary(out, family, {{"0.5", l->p50}, {"0.9", l->p90}, {"0.95", l->p95}, {"0.99", l->p99}},
              l->mean, l->n);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ";") + s;
  return out;
}

ExportPoint model_point(Labels labels, const PointRecord& p) {
  const PointParams& k = p.params;
  labels.insert(labels.end(), {{"model", k.model},
                               {"phase", k.phase},
                               {"batch", std::to_string(k.batch)},
                               {"context", std::to_string(k.context)},
                               {"prompt", std::to_string(k.prompt)},
                               {"tp", std::to_string(k.tp)},
                               {"dtype", k.dtype},
                               {"backend", k.backend},
                               {"topology", k.topology},
                               {"inject", joined(k.inject)}});
  // A serve point's load is what its sweep varies: labelled by its own name (concurrency=4 or
  // rate=2.5), so PromQL selects a load as it selects a batch.
  if (k.serve) labels.emplace_back(k.serve->load, metric_number(k.serve->x));
  ExportPoint e{std::move(labels), {}, {}};
  const MetricsRecord m = p.metrics.value_or(MetricsRecord{});
  add(e.values, kMfuCeiling, m.mfu_ceiling);
  const StepTimeRecord& s = m.step_time_s;
  add_summary(e.values, kStep, {{"0.5", s.p50}, {"0.95", s.p95}, {"0.99", s.p99}}, s.mean, s.n);
  add(e.values, kTokens, m.tokens_per_s);
  add_latency(e.values, kItl, m.itl_s);
  add_latency(e.values, kTtft, m.ttft_s);
  add_latency(e.values, kTpot, m.tpot_s);
  add_latency(e.values, kE2el, m.e2el_s);
  add_latency(e.values, kQueue, m.queue_s);
  add_latency(e.values, kPrefill, m.ttft_admitted_s);
  add_latency(e.values, kDecode, m.decode_s);
  if (m.goodput) {
    add(e.values, kGoodput, m.goodput->requests_per_s);
    add(e.values, kGoodputFraction, m.goodput->fraction);
  }
  if (m.cost_per_mtok) {  // a null cost (no tokens) is no sample
    add(e.values, kCostOutput, m.cost_per_mtok->output_usd.value_or(NAN));
    add(e.values, kCostTotal, m.cost_per_mtok->total_usd.value_or(NAN));
  }
  std::map<int64_t, double> group_wait;
  for (const RankRecord& r : p.ranks.value_or(std::vector<RankRecord>{}))
    group_wait[r.group] += r.wait_s;
  for (const RankRecord& r : p.ranks.value_or(std::vector<RankRecord>{})) {
    ExportRank x{{{"rank", std::to_string(r.rank)}, {"host", r.host}}, {}};
    if (r.caused_wait_s && group_wait[r.group] > 0)
      add(x.values, kCausedWait, *r.caused_wait_s / group_wait[r.group]);
    add(x.values, kMbu, r.mbu);
    add(x.values, kMfu, r.mfu);
    add(x.values, kOccupancy, r.occupancy_sampled);
    add(x.values, kBusy, r.busy_fraction);
    add(x.values, kWait, r.wall_s > 0 ? r.wait_s / r.wall_s : NAN);
    e.ranks.push_back(std::move(x));
  }
  return e;
}

ExportPoint coll_point(Labels labels, const CollPointRecord& p) {
  const CollParamsRecord& k = p.params;
  labels.insert(labels.end(), {{"kind", k.kind},
                               {"op", k.op},
                               {"dtype", k.dtype},
                               {"bytes", std::to_string(k.bytes)},
                               {"ranks", std::to_string(k.ranks)},
                               {"collective", k.collective},
                               {"backend", k.backend},
                               {"topology", k.topology}});
  ExportPoint e{std::move(labels), {}, {}};
  add(e.values, kCollTime, p.metrics.time_s.mean);
  add(e.values, kCollBusbw, p.metrics.busbw_GBps * 1e9);
  for (const CollRankRecord& r : p.ranks) {
    ExportRank x{{{"rank", std::to_string(r.rank)}, {"host", r.host}}, {}};
    add(x.values, kCollLag, r.arrival_lag_s.mean);
    e.ranks.push_back(std::move(x));
  }
  return e;
}

}  // namespace

const std::vector<MetricFamily>& metric_families() {
  static const std::vector<MetricFamily> f = {
      {"tpbench_mbu", "gauge",
       "Model bandwidth utilisation of the rank: cost-model bytes per step / (its p50 step time x "
       "peak bandwidth)",
       true},
      {"tpbench_mfu", "gauge",
       "Model FLOPs utilisation of the rank: cost-model FLOPs per step / (its p50 step time x peak "
       "FLOP/s)",
       true},
      {"tpbench_mfu_ceiling", "gauge",
       "min(1, intensity / ridge): the best MFU the point's batch can reach", false},
      {"tpbench_occupancy", "gauge",
       "Fraction of sampling windows with any device work in flight (NVML utilization.gpu's "
       "definition on the rank's timeline); not efficiency",
       true},
      {"tpbench_busy_fraction", "gauge",
       "Union of the rank's compute and collective intervals / wall (waiting counts as busy)",
       true},
      {"tpbench_wait_fraction", "gauge",
       "The rank's wait in collectives (Scalasca wait at NxN) / its wall", true},
      {"tpbench_step_seconds", "summary",
       "Step time over the measured steps (the slowest rank of its TP group), seconds", false},
      {"tpbench_tokens_per_second", "gauge",
       "Tokens per second over the measured steps, all TP groups (serve: every token a step "
       "processed)",
       false},
      {"tpbench_itl_seconds", "summary",
       "Serve: inter-token latency pooled over the measured requests, virtual clock", false},
      {"tpbench_ttft_seconds", "summary",
       "Serve: time to first token of the measured requests, virtual clock", false},
      {"tpbench_tpot_seconds", "summary",
       "Serve: time per output token of each measured request with more than one, (E2EL - "
       "TTFT) / (output tokens - 1), virtual clock",
       false},
      {"tpbench_e2el_seconds", "summary",
       "Serve: end-to-end latency of the measured requests (finish - arrival), virtual clock",
       false},
      {"tpbench_request_queue_seconds", "summary",
       "Serve: time from arrival to admission (vLLM's request_queue_time), virtual clock", false},
      {"tpbench_request_prefill_seconds", "summary",
       "Serve: time from admission to the first token (vLLM's request_prefill_time), virtual "
       "clock",
       false},
      {"tpbench_request_decode_seconds", "summary",
       "Serve: time from the first token to the last (vLLM's request_decode_time), virtual clock",
       false},
      {"tpbench_goodput_requests_per_second", "gauge",
       "Serve with --slo: completed requests that met every SLO, per second", false},
      {"tpbench_goodput_fraction", "gauge",
       "Serve with --slo: the fraction of completed requests that met every SLO", false},
      {"tpbench_cost_usd_per_million_output_tokens", "gauge",
       "Serve with a price: GPUs x USD per GPU-hour / 3600 / output tokens per second x 1e6",
       false},
      {"tpbench_cost_usd_per_million_tokens", "gauge",
       "Serve with a price: GPUs x USD per GPU-hour / 3600 / total (prompt + output) tokens per "
       "second x 1e6",
       false},
      {"tpbench_collective_seconds", "gauge",
       "tpbench collectives: time per call (nccl-tests' time: max over ranks of the loop / "
       "iterations)",
       false},
      {"tpbench_collective_busbw_bytes_per_second", "gauge",
       "tpbench collectives: bus bandwidth (algbw x the kind's bus factor)", false},
      {"tpbench_collective_arrival_lag_seconds", "gauge",
       "tpbench collectives: the rank's mean lag behind the first rank to enter", true},
      {"tpbench_caused_wait_share", "gauge",
       "Share of its TP group's wait in collectives spent in the instances this rank entered "
       "last: how much of the group's waiting is for it",
       true},
  };
  static_assert(kFamilies == 23, "metric_families() lists every Family");
  return f;
}

std::vector<ExportPoint> export_points(const std::string& path, const ResultsDoc& doc) {
  std::vector<ExportPoint> out;
  for (std::size_t i = 0; i < doc.points.size(); ++i) {
    const ResultsPoint& p = doc.points[i];
    Labels labels{{"results", path}, {"point", std::to_string(i)}};
    if (p.model && p.model->status == PointStatus::ok)
      out.push_back(model_point(std::move(labels), *p.model));
    else if (p.coll && p.coll->status == PointStatus::ok)
      out.push_back(coll_point(std::move(labels), *p.coll));
  }
  return out;
}

}  // namespace tpb
