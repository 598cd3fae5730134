// Skew, wait, transfer and arrived_last come from harness/analysis with each timed iteration as
// one collective instance, so they mean exactly what they mean for the TP step's all-reduces
// (docs/ARCHITECTURE.md "Metric definitions").
#include "harness/record/coll_point_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/bus_bandwidth.h"
#include "collectives/kinds/coll_kind.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/stats.h"
#include "harness/config/backend_traits.h"

namespace tpb {

namespace {

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

// The size's figures over ranks: the loop time reduced as nccl-tests' -a asks, the worst clock
// bounds the sync, and wrong values add up.
struct OverRanks {
  double mean = 0, baseline = 0, uncertainty = 0, max_offset = 0, drift = 0;
  CollOverRanksRecord times;
  int64_t wrong = 0;
};

// -a 0|1|2|3: rank 0's, the mean, the minimum, the maximum (nccl-tests' order).
double reported_time(const CollOverRanksRecord& t, int average) {
  const double pick[4] = {t.rank0, t.avg, t.min, t.max};
  return pick[std::clamp(average, 0, 3)];
}

OverRanks over_ranks(const std::vector<CollRankResult>& ranks, int average) {
  OverRanks o;
  o.times = {ranks[0].loop_s, 0, ranks[0].loop_s, ranks[0].loop_s};
  for (const auto& r : ranks) {
    o.times.avg += r.loop_s / static_cast<double>(ranks.size());
    o.times.min = std::min(o.times.min, r.loop_s);
    o.times.max = std::max(o.times.max, r.loop_s);
    o.baseline = std::max(o.baseline, r.baseline_s);
    o.uncertainty = std::max(o.uncertainty, r.uncertainty_s);
    o.max_offset = std::max(o.max_offset, std::abs(r.offset_s));
    o.drift = std::max(o.drift, std::abs(r.drift_ppm));
    o.wrong += r.wrong;
  }
  o.mean = reported_time(o.times, average);
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
    // The ping-pong's part only: the collectives verb records no device conversion (yet).
    t.clock_uncertainty_s = ranks[r].uncertainty_s;
    in.ranks.push_back(std::move(t));
  }
  in.clock_uncertainty_s = uncertainty;
  return analyze(in);
}

CollParamsRecord params_record(const CollectivesSpec& s, const CollCounts& c, int n) {
  return {.kind = coll_kind_name(s.kind),
          .op = s.op,
          .dtype = dtype_name(s.dtype),
          .bytes = c.bytes,
          .count = c.recv,
          .ranks = n,
          .inplace = s.inplace,
          .root = s.root,
          .collective = s.collective,
          .backend = s.backend,
          .topology = s.topology,
          .iters = s.iters,
          .warmup_iters = s.warmup,
          .average = s.average,
          .mpi_mode = collective_traits(s.collective).host_calls
                          ? std::optional<std::string>(mpi_mode_name(s.mpi_mode))
                          : std::nullopt};
}

CollMetricsRecord metrics_record(const CollectivesSpec& s, const CollCounts& c, int n,
                                 const std::vector<double>& span, const OverRanks& o) {
  CollMetricsRecord m;
  const Summary t = summarize(span);
  m.time_s = {o.mean, t.p50, t.p99, t.min, t.max, t.mean, static_cast<int64_t>(t.n), o.times};
  m.busbw_factor = bus_factor(s.kind, n);
  m.algbw_GBps = o.mean > 0 ? static_cast<double>(c.bytes) / o.mean / 1e9 : 0;
  m.busbw_GBps = m.algbw_GBps * m.busbw_factor;
  m.wrong = o.wrong;
  static const char* const kOver[4] = {"rank 0's", "mean over ranks", "min over ranks",
                                       "max over ranks"};
  m.definitions = {fmt::format("{} (-a {}) of (stamp after the last call - stamp before the "
                               "first) / iters, own clock: nccl-tests' timed loop, nothing "
                               "stamped inside it",
                               kOver[std::clamp(s.average, 0, 3)], s.average),
                   "stamped pass, apart from the timed loop (a stamp before and after each "
                   "call): per iteration, last rank's exit - first rank's enter, synced clock",
                   "bytes / time_s.mean / 1e9",
                   "algbw_GBps * busbw_factor (nccl-tests PERFORMANCE.md)"};
  if (s.baseline)
    m.baseline = CollBaselineRecord{o.baseline, o.baseline > 0 ? o.mean / o.baseline : 0,
                                    "plain blocking MPI loop, MPI_Wtime around it, max over ranks"};
  return m;
}

// By member, not brace order: the schema puts wait before transfer here, unlike a model point.
CollCollectivesRecord collectives_record(const CollectiveSummary& cs) {
  CollCollectivesRecord c;
  c.count = cs.count;
  c.skew_s = {cs.skew.p50, cs.skew.p95, cs.skew.max};
  c.wait_fraction = cs.wait_fraction;
  c.wait_s_total = cs.wait_s_total;
  c.transfer_s_total = cs.transfer_s_total;
  return c;
}

// Per rank: its arrival lag behind the first rank, and its analysis figures.
std::vector<CollRankRecord> rank_records(const std::vector<CollRankResult>& ranks,
                                         const std::vector<std::string>& hosts,
                                         const std::vector<double>& first, const PointAnalysis& a) {
  std::vector<CollRankRecord> out;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::vector<double> lag(first.size());
    for (std::size_t i = 0; i < first.size(); ++i) lag[i] = ranks[r].iters[i].t0 - first[i];
    const Summary ls = summarize(lag);
    const RankMetrics& rm = a.ranks[r];
    out.push_back({static_cast<int64_t>(r),
                   hosts[r],
                   {ls.mean, ls.p50, ls.p95, ls.max},
                   rm.wait_s,
                   rm.transfer_s,
                   rm.arrived_last,
                   rm.clock_condition_violations,
                   ranks[r].loop_s,
                   ranks[r].wrong});
  }
  return out;
}

}  // namespace

CollPointRecord coll_point(const CollectivesSpec& s, const CollCounts& c,
                           const std::vector<CollRankResult>& ranks,
                           const std::vector<std::string>& hosts) {
  const int n = static_cast<int>(ranks.size());
  const IterationSpans it = iteration_spans(ranks);
  const OverRanks o = over_ranks(ranks, s.average);
  const PointAnalysis a = analyze_iterations(ranks, o.uncertainty);
  CollPointRecord p;
  p.params = params_record(s, c, n);
  p.status = PointStatus::ok;
  p.metrics = metrics_record(s, c, n, it.span, o);
  p.collectives = collectives_record(a.collectives);
  p.ranks = rank_records(ranks, hosts, it.first, a);
  p.straggler = {a.straggler.rank, a.straggler.arrived_last_share};
  p.clock_sync = {"ping-pong to rank 0, min-RTT sample, before and after the size", o.max_offset,
                  o.uncertainty, o.drift, a.clock_condition_violations};
  p.samples = {it.span, a.collectives.skew_s};
  return p;
}

CollSummaryRecord coll_summary(const std::vector<CollPointRecord>& points) {
  CollSummaryRecord s;
  double busbw = 0;
  for (const auto& p : points) {
    s.wrong_total += p.metrics.wrong;
    busbw += p.metrics.busbw_GBps;
  }
  s.sizes = static_cast<int64_t>(points.size());
  s.avg_busbw_GBps = points.empty() ? 0.0 : busbw / static_cast<double>(points.size());
  return s;
}

std::vector<CollSizeRow> coll_size_rows(const std::vector<CollPointRecord>& points) {
  std::vector<CollSizeRow> rows;
  for (const auto& p : points) {
    if (rows.empty() || rows.back().any().params.bytes != p.params.bytes) rows.emplace_back();
    (p.params.inplace ? rows.back().in_place : rows.back().out_of_place) = &p;
    // The model prices bytes alone: its one point stands for both halves.
    if (p.params.model) rows.back().in_place = rows.back().out_of_place = &p;
  }
  return rows;
}

std::string coll_redop_column(const CollParamsRecord& p) {
  const CollKind k = parse_coll_kind(p.kind, "kind");
  return k == CollKind::all_gather || k == CollKind::broadcast ? "none" : p.op;
}

int64_t coll_root_column(const CollParamsRecord& p) {
  const CollKind k = parse_coll_kind(p.kind, "kind");
  return k == CollKind::broadcast || k == CollKind::reduce ? p.root : -1;
}

}  // namespace tpb
