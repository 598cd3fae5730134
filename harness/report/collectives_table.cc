// `tpbench collectives` records and console rows. Skew, wait, transfer and arrived_last come from
// harness/analysis with each timed iteration as one collective instance, so they mean exactly what
// they mean for the TP step's all-reduces (ARCHITECTURE.md "Metric definitions").
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

// Per iteration, on the synced clock: the first rank's enter and the span from it to the last
// rank's exit.
struct IterationSpans {
  std::vector<double> first, span;
};

IterationSpans iteration_spans(const std::vector<CollRankResult>& ranks) {
  const std::size_t iters = ranks[0].iters.size();
  IterationSpans x{std::vector<double>(iters, std::numeric_limits<double>::infinity()),
                   std::vector<double>(iters)};
  std::vector<double> last_exit(iters, -std::numeric_limits<double>::infinity());
  for (const auto& r : ranks)
    for (std::size_t i = 0; i < iters; ++i) {
      x.first[i] = std::min(x.first[i], r.iters[i].t0);
      last_exit[i] = std::max(last_exit[i], r.iters[i].t1);
    }
  for (std::size_t i = 0; i < iters; ++i) x.span[i] = last_exit[i] - x.first[i];
  return x;
}

// The size's figures over ranks: the slowest rank bounds the time, the worst clock bounds the
// sync, and wrong values add up.
struct OverRanks {
  double mean = 0, baseline = 0, uncertainty = 0, max_offset = 0, drift = 0;
  int64_t wrong = 0;
};

OverRanks over_ranks(const std::vector<CollRankResult>& ranks) {
  OverRanks o;
  for (const auto& r : ranks) {
    o.mean = std::max(o.mean, r.loop_s);
    o.baseline = std::max(o.baseline, r.baseline_s);
    o.uncertainty = std::max(o.uncertainty, r.uncertainty_s);
    o.max_offset = std::max(o.max_offset, std::abs(r.offset_s));
    o.drift = std::max(o.drift, std::abs(r.drift_ppm));
    o.wrong += r.wrong;
  }
  return o;
}

// Each timed iteration is one collective instance of harness/analysis.
PointAnalysis analyze_iterations(const std::vector<CollRankResult>& ranks, double uncertainty) {
  AnalysisInput in;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    RankTrace t;
    t.rank = static_cast<int>(r);
    t.group_rank = static_cast<int>(r);
    t.segs = ranks[r].iters;
    in.ranks.push_back(std::move(t));
  }
  in.clock_uncertainty_s = uncertainty;
  return analyze(in);
}

oj params_json(const CollectivesSpec& s, const CollCounts& c, int n) {
  return {{"kind", coll_kind_name(s.kind)},
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
}

oj metrics_json(const CollectivesSpec& s, const CollCounts& c, int n,
                const std::vector<double>& span, const OverRanks& o) {
  const double factor = bus_factor(s.kind, n);
  const double algbw = o.mean > 0 ? static_cast<double>(c.bytes) / o.mean / 1e9 : 0;
  oj m;
  m["time_s"] = time_json(summarize(span), o.mean);
  m["algbw_GBps"] = algbw;
  m["busbw_GBps"] = algbw * factor;
  m["busbw_factor"] = factor;
  m["wrong"] = o.wrong;
  m["definitions"] = {
      {"time_s.mean", "max over ranks of (last exit - first enter) / iters, own clock"},
      {"time_s.p50/p99", "per iteration: last rank's exit - first rank's enter, synced clock"},
      {"algbw_GBps", "bytes / time_s.mean / 1e9"},
      {"busbw_GBps", "algbw_GBps * busbw_factor (nccl-tests PERFORMANCE.md)"}};
  if (s.baseline)
    m["baseline"] = {{"time_s", o.baseline},
                     {"ratio", o.baseline > 0 ? o.mean / o.baseline : 0},
                     {"what", "plain blocking MPI loop, MPI_Wtime around it, max over ranks"}};
  return m;
}

oj collectives_json(const CollectiveSummary& cs) {
  return {{"count", cs.count},
          {"skew_s", {{"p50", cs.skew.p50}, {"p95", cs.skew.p95}, {"max", cs.skew.max}}},
          {"wait_fraction", cs.wait_fraction},
          {"wait_s_total", cs.wait_s_total},
          {"transfer_s_total", cs.transfer_s_total}};
}

// Per rank: its arrival lag behind the first rank, and its analysis figures.
oj ranks_json(const std::vector<CollRankResult>& ranks, const std::vector<std::string>& hosts,
              const std::vector<double>& first, const PointAnalysis& a) {
  oj rj = oj::array();
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> lag(first.size());
    for (std::size_t i = 0; i < first.size(); ++i) lag[i] = ranks[r].iters[i].t0 - first[i];
    const Summary ls = summarize(lag);
    const RankMetrics& rm = a.ranks[r];
    rj.push_back(
        {{"rank", static_cast<int>(r)},
         {"host", hosts[r]},
         {"arrival_lag_s", {{"mean", ls.mean}, {"p50", ls.p50}, {"p95", ls.p95}, {"max", ls.max}}},
         {"wait_s", rm.wait_s},
         {"transfer_s", rm.transfer_s},
         {"arrived_last", rm.arrived_last},
         {"clock_condition_violations", rm.clock_condition_violations},
         {"time_s", ranks[r].loop_s},
         {"wrong", ranks[r].wrong}});
  }
  return rj;
}

}  // namespace

oj coll_point_json(const CollectivesSpec& s, const CollCounts& c,
                   const std::vector<CollRankResult>& ranks,
                   const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(ranks.size());
  const IterationSpans it = iteration_spans(ranks);
  const OverRanks o = over_ranks(ranks);
  const PointAnalysis a = analyze_iterations(ranks, o.uncertainty);
  oj p;
  p["params"] = params_json(s, c, n);
  p["status"] = "ok";
  p["reason"] = "";
  p["metrics"] = metrics_json(s, c, n, it.span, o);
  p["collectives"] = collectives_json(a.collectives);
  p["ranks"] = ranks_json(ranks, hosts, it.first, a);
  p["straggler"] = {{"rank", a.straggler.rank},
                    {"arrived_last_share", a.straggler.arrived_last_share}};
  p["clock_sync"] = {{"method", "ping-pong to rank 0, min-RTT sample, before and after the size"},
                     {"max_offset_s", o.max_offset},
                     {"max_uncertainty_s", o.uncertainty},
                     {"drift_ppm", o.drift},
                     {"clock_condition_violations", a.clock_condition_violations}};
  p["samples"] = {{"iter_time_s", it.span}, {"skew_s", a.collectives.skew_s}};
  return p;
}

std::string coll_table_header(const CollectivesSpec& s, int n) {
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
