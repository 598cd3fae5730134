// `tpbench collectives` console rows in nccl-tests' columns (size in bytes, count, type, redop,
// root, then time/algbw/busbw/#wrong out-of-place and in-place), so the parsers people keep for
// nccl-tests' output read it; tpbench's own figures (percentiles, skew, wait, per-rank lag)
// follow on the same line, after nccl-tests' last column.
#include "harness/report/collectives_table.h"

#include <fmt/format.h>

#include <iostream>

#include "harness/config/backend_traits.h"
#include "harness/record/coll_point_builder.h"

namespace tpb {

namespace {

// A number in at most `width` characters, as many decimals as fit: nccl-tests' columns never
// grow, so a parser splitting on whitespace sees the same column count at every size.
std::string fit(double v, int width) {
  for (int prec = 2; prec >= 0; --prec) {
    std::string s = fmt::format("{:>{}.{}f}", v, width, prec);
    if (static_cast<int>(s.size()) <= width) return s;
  }
  return fmt::format("{:>{}.1e}", v, width);
}

// One half's four columns; an absent half prints N/A in each, so the column count is fixed.
std::string half_columns(const CollPointRecord* p) {
  if (p == nullptr) return fmt::format("  {:>7}  {:>6}  {:>6}  {:>6}", "N/A", "N/A", "N/A", "N/A");
  const CollMetricsRecord& m = p->metrics;
  return fmt::format("  {}  {}  {}  {:>6}", fit(m.time_s.mean * 1e6, 7), fit(m.algbw_GBps, 6),
                     fit(m.busbw_GBps, 6), m.wrong);
}

std::string run_line(const CollectivesSpec& s, int n) {
  static const char* const kAverage[4] = {"rank 0", "mean over ranks", "min over ranks",
                                          "max over ranks"};
  return fmt::format(
      "# tpbench collectives: {} op {} type {} on {} ranks, collective {}{} ({}), topology {}, "
      "warmup {} iters {}, time: {} (-a {})\n",
      coll_kind_name(s.kind), s.op, dtype_nccl_name(s.dtype), n, s.collective,
      collective_traits(s.collective).host_calls ? std::string(" ") + mpi_mode_name(s.mpi_mode)
                                                 : "",
      s.backend, s.topology, s.warmup, s.iters, kAverage[s.average], s.average);
}

}  // namespace

std::string coll_table_header(const CollectivesSpec& s, int n) {
  const bool modelled = backend_traits(s.backend).virtual_ranks;
  std::string h =
      modelled ? fmt::format("# modelled, not measured: {} virtual ranks, {} per node, --algo {}\n",
                             n, s.gpus_per_node, s.algo)
               : std::string();
  h += run_line(s, n);
  const std::string plain = s.baseline ? fmt::format(" {:>9} {:>6}", "plain", "ratio") : "";
  const std::string lags =
      modelled ? "NCCL's model: algorithm/protocol, latency" : "arrival lag per rank, mean";
  h += fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:^33}  {:^33}  {}\n", "", "", "", "",
                   "", "out-of-place", "in-place", "tpbench, in-place half");
  h += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  "
      "{:>6}  {:>9} {:>9} {:>9} {:>9} {:>6}{}  {}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
      "busbw", "#wrong", "p50", "p99", "skew_p50", "skew_p95", "wait%", plain, lags);
  h += fmt::format(
      "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  "
      "{:>6}  {:>9} {:>9} {:>9} {:>9} {:>6}{}  {}\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
      "", "(us)", "(us)", "(us)", "(us)", "",
      s.baseline ? fmt::format(" {:>9} {:>6}", "(us)", "") : "", "(us)");
  return h;
}

std::string coll_table_row(const CollSizeRow& row, bool baseline) {
  const CollPointRecord& p = row.any();  // tpbench's own columns: the in-place half's
  const CollMetricsRecord& m = p.metrics;
  const SkewRecord& skew = p.collectives.skew_s;
  std::string lags;
  if (p.params.model && p.params.model->algo == "measured")
    lags = " measured curve";  // no algorithm, protocol or latency: the curve is the time
  else if (p.params.model)
    lags = fmt::format(" {}/{} {:.1f}", p.params.model->algo, p.params.model->protocol,
                       p.params.model->latency_s * 1e6);
  else
    for (const auto& r : p.ranks)
      lags += fmt::format(" r{}:{:.1f}", r.rank, r.arrival_lag_s.mean * 1e6);
  // The builder writes the baseline block whenever --baseline is given.
  std::string plain;
  if (baseline) {
    const CollBaselineRecord b = m.baseline.value_or(CollBaselineRecord{});
    plain = fmt::format(" {:>9.2f} {:>6.2f}", b.time_s * 1e6, b.ratio);
  }
  return fmt::format(
      "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}  {:>9.2f} {:>9.2f} {:>9.2f} "
      "{:>9.2f} {:>6.1f}{} {}\n",
      p.params.bytes, p.params.count, dtype_nccl_name(parse_dtype(p.params.dtype, "dtype")),
      coll_redop_column(p.params), coll_root_column(p.params), half_columns(row.out_of_place),
      half_columns(row.in_place), m.time_s.p50 * 1e6, m.time_s.p99 * 1e6, skew.p50 * 1e6,
      skew.p95 * 1e6, 100 * p.collectives.wait_fraction, plain, lags);
}

std::string coll_summary_text(const CollSummaryRecord& s) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:.3f} GB/s\n",
                     s.wrong_total, s.wrong_total == 0 ? "OK" : "FAILED", s.avg_busbw_GBps);
}

int64_t finish_coll_sweep(const std::string& out, const std::vector<CollPointRecord>& points,
                          ResultsWriter* writer) {
  const CollSummaryRecord summary = coll_summary(points);
  std::cout << coll_summary_text(summary);
  if (writer) {
    writer->set_summary(summary);
    std::cout << "results: " << out << "/results.json\n";
  }
  std::cout << std::flush;
  return summary.wrong_total;
}

}  // namespace tpb
