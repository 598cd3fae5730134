// Collective sweep records. Skew, wait, transfer and arrived_last come from harness/analysis
// with each timed iteration as one collective instance, so they mean exactly what they mean
// for the TP step's all-reduces (ARCHITECTURE.md "Metric definitions").
#include "harness/report/collectives_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/bus_bandwidth.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/stats.h"
#include "harness/config/axis.h"
#include "harness/record/json_number.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

oj time_json(const Summary& s, double mean) {
  return oj{{"mean", mean}, {"p50", s.p50},        {"p99", s.p99}, {"min", s.min},
            {"max", s.max}, {"iter_mean", s.mean}, {"n", s.n}};
}

}  // namespace

oj coll_point_json(const CollSweepSpec& s, const CollCounts& c,
                   const std::vector<CollRankResult>& ranks,
                   const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(ranks.size());
  // Per-iteration span (first enter .. last exit) and each rank's arrival lag behind the first.
  const std::size_t iters = ranks[0].iters.size();
  std::vector<double> span(iters), first(iters, std::numeric_limits<double>::infinity());
  std::vector<double> last_exit(iters, -std::numeric_limits<double>::infinity());
  for (const auto& r : ranks)
    for (std::size_t i = 0; i < iters; ++i) {
      first[i] = std::min(first[i], r.iters[i].t0);
      last_exit[i] = std::max(last_exit[i], r.iters[i].t1);
    }
  for (std::size_t i = 0; i < iters; ++i) span[i] = last_exit[i] - first[i];

  AnalysisInput in;
  double mean = 0, base = 0, unc = 0, max_off = 0, drift = 0;
  int64_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    RankTrace t;
    t.rank = r;
    t.group_rank = r;
    t.segs = ranks[r].iters;
    in.ranks.push_back(std::move(t));
    mean = std::max(mean, ranks[r].loop_s);
    base = std::max(base, ranks[r].baseline_s);
    unc = std::max(unc, ranks[r].uncertainty_s);
    max_off = std::max(max_off, std::abs(ranks[r].offset_s));
    drift = std::max(drift, std::abs(ranks[r].drift_ppm));
    wrong += ranks[r].wrong;
  }
  in.clock_uncertainty_s = unc;
  const PointAnalysis a = analyze(in);

  oj p;
  p["params"] = {{"kind", coll_kind_name(s.kind)},
                 {"op", s.op},
                 {"dtype", dtype_name(s.dtype)},
                 {"bytes", c.bytes},
                 {"count", c.recv},
                 {"ranks", n},
                 {"inplace", s.inplace},
                 {"root", s.root},
                 {"collective", s.collective},
                 {"backend", s.backend},
                 {"topology", s.topology},
                 {"iters", s.iters},
                 {"warmup_iters", s.warmup}};
  p["status"] = "ok";
  p["reason"] = "";
  const double factor = bus_factor(s.kind, n);
  const double algbw = mean > 0 ? static_cast<double>(c.bytes) / mean / 1e9 : 0;
  oj m;
  m["time_s"] = time_json(summarize(span), mean);
  m["algbw_GBps"] = algbw;
  m["busbw_GBps"] = algbw * factor;
  m["busbw_factor"] = factor;
  m["wrong"] = wrong;
  m["definitions"] = {
      {"time_s.mean", "max over ranks of (last exit - first enter) / iters, own clock"},
      {"time_s.p50/p99", "per iteration: last rank's exit - first rank's enter, synced clock"},
      {"algbw_GBps", "bytes / time_s.mean / 1e9"},
      {"busbw_GBps", "algbw_GBps * busbw_factor (nccl-tests PERFORMANCE.md)"}};
  if (s.baseline)
    m["baseline"] = {{"time_s", base},
                     {"ratio", base > 0 ? mean / base : 0},
                     {"what", "plain blocking MPI loop, MPI_Wtime around it, max over ranks"}};
  p["metrics"] = m;
  const auto& cs = a.collectives;
  p["collectives"] = {
      {"count", cs.count},
      {"skew_s", {{"p50", cs.skew.p50}, {"p95", cs.skew.p95}, {"max", cs.skew.max}}},
      {"wait_fraction", cs.wait_fraction},
      {"wait_s_total", cs.wait_s_total},
      {"transfer_s_total", cs.transfer_s_total}};
  oj rj = oj::array();
  for (int r = 0; r < n; ++r) {
    std::vector<double> lag(iters);
    for (std::size_t i = 0; i < iters; ++i) lag[i] = ranks[r].iters[i].t0 - first[i];
    const Summary ls = summarize(lag);
    const RankMetrics& rm = a.ranks[r];
    rj.push_back(
        {{"rank", r},
         {"host", hosts[r]},
         {"arrival_lag_s", {{"mean", ls.mean}, {"p50", ls.p50}, {"p95", ls.p95}, {"max", ls.max}}},
         {"wait_s", rm.wait_s},
         {"transfer_s", rm.transfer_s},
         {"arrived_last", rm.arrived_last},
         {"clock_condition_violations", rm.clock_condition_violations},
         {"time_s", ranks[r].loop_s},
         {"wrong", ranks[r].wrong}});
  }
  p["ranks"] = rj;
  p["straggler"] = {{"rank", a.straggler.rank},
                    {"arrived_last_share", a.straggler.arrived_last_share}};
  p["clock_sync"] = {{"method", "ping-pong to rank 0, min-RTT sample, before and after the size"},
                     {"max_offset_s", max_off},
                     {"max_uncertainty_s", unc},
                     {"drift_ppm", drift},
                     {"clock_condition_violations", a.clock_condition_violations}};
  p["samples"] = {{"iter_time_s", span}, {"skew_s", cs.skew_s}};
  return p;
}

std::string coll_table_header(const CollSweepSpec& s, int n) {
  std::string h = fmt::format(
      "# tpbench collectives: {} op {} dtype {} on {} ranks, collective {} ({}), topology {}, "
      "{}, warmup {} iters {}\n",
      coll_kind_name(s.kind), s.op, dtype_name(s.dtype), n, s.collective, s.backend, s.topology,
      s.inplace ? "in-place" : "out-of-place", s.warmup, s.iters);
  h += fmt::format("#{:>11} {:>10} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6}{}  {}\n",
                   "size", "count", "time", "algbw", "busbw", "#wrong", "p50", "p99", "skew_p50",
                   "skew_p95", "wait%",
                   s.baseline ? fmt::format(" {:>9} {:>6}", "plain", "ratio") : "",
                   "arrival lag per rank, mean");
  h += fmt::format("#{:>11} {:>10} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6}{}  {}\n",
                   "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
                   "(us)", "", s.baseline ? fmt::format(" {:>9} {:>6}", "(us)", "") : "", "(us)");
  return h;
}

std::string coll_table_row(const oj& p, bool baseline) {
  const auto& m = p["metrics"];
  const auto& c = p["collectives"];
  std::string lags;
  for (const auto& r : p["ranks"])
    lags += fmt::format(" r{}:{:.1f}", r["rank"].get<int>(),
                        json_number(r["arrival_lag_s"], "mean") * 1e6);
  std::string plain;
  if (baseline)
    plain = fmt::format(" {:>9.2f} {:>6.2f}", json_number(m["baseline"], "time_s") * 1e6,
                        json_number(m["baseline"], "ratio"));
  return fmt::format(
      " {:>11} {:>10} {:>9.2f} {:>8.3f} {:>8.3f} {:>7} {:>9.2f} {:>9.2f} {:>9.2f} "
      "{:>9.2f} {:>6.1f}{} {}\n",
      format_size(p["params"]["bytes"].get<int64_t>()), p["params"]["count"].get<int64_t>(),
      json_number(m["time_s"], "mean") * 1e6, json_number(m, "algbw_GBps"),
      json_number(m, "busbw_GBps"), m["wrong"].get<int64_t>(),
      json_number(m["time_s"], "p50") * 1e6, json_number(m["time_s"], "p99") * 1e6,
      json_number(c["skew_s"], "p50") * 1e6, json_number(c["skew_s"], "p95") * 1e6,
      100 * json_number(c, "wait_fraction"), plain, lags);
}

oj coll_summary_json(const std::vector<oj>& points) {
  int64_t wrong = 0;
  double busbw = 0;
  for (const auto& p : points) {
    wrong += p["metrics"]["wrong"].get<int64_t>();
    busbw += json_number(p["metrics"], "busbw_GBps");
  }
  return {{"sizes", points.size()},
          {"wrong_total", wrong},
          {"avg_busbw_GBps", points.empty() ? 0.0 : busbw / static_cast<double>(points.size())}};
}

std::string coll_summary_text(const oj& s) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:.3f} GB/s\n",
                     s["wrong_total"].get<int64_t>(), s["wrong_total"] == 0 ? "OK" : "FAILED",
                     json_number(s, "avg_busbw_GBps"));
}

}  // namespace tpb
