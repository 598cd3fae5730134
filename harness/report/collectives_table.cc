// `tpbench collectives` console rows: times in microseconds, bandwidths in GB/s, as nccl-tests
// prints them, plus the percentiles, skew and per-rank arrival lag the record carries.
#include "harness/report/collectives_table.h"

#include <fmt/format.h>

#include <iostream>

#include "harness/config/axis.h"
#include "harness/record/coll_point_builder.h"

namespace tpb {

std::string coll_table_header(const CollectivesSpec& s, int n) {
  std::string h =
      s.collective == "model"
          ? fmt::format("# modelled, not measured: {} virtual ranks, {} per node, --algo {}\n", n,
                        s.gpus_per_node, s.algo)
          : std::string();
  h += fmt::format(
      "# tpbench collectives: {} op {} dtype {} on {} ranks, collective {}{} ({}), topology {}, "
      "{}, warmup {} iters {}\n",
      coll_kind_name(s.kind), s.op, dtype_name(s.dtype), n, s.collective,
      s.collective == "mpi" ? std::string(" ") + mpi_mode_name(s.mpi_mode) : "", s.backend,
      s.topology, s.inplace ? "in-place" : "out-of-place", s.warmup, s.iters);
  h += fmt::format("#{:>11} {:>10} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6}{}  {}\n",
                   "size", "count", "time", "algbw", "busbw", "#wrong", "p50", "p99", "skew_p50",
                   "skew_p95", "wait%",
                   s.baseline ? fmt::format(" {:>9} {:>6}", "plain", "ratio") : "",
                   s.collective == "model" ? "NCCL's model: algorithm/protocol, latency"
                                           : "arrival lag per rank, mean");
  h += fmt::format("#{:>11} {:>10} {:>9} {:>8} {:>8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6}{}  {}\n",
                   "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)",
                   "(us)", "", s.baseline ? fmt::format(" {:>9} {:>6}", "(us)", "") : "", "(us)");
  return h;
}

std::string coll_table_row(const CollPointRecord& p, bool baseline) {
  const CollMetricsRecord& m = p.metrics;
  const SkewRecord& skew = p.collectives.skew_s;
  std::string lags;
  if (p.params.model)
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
      " {:>11} {:>10} {:>9.2f} {:>8.3f} {:>8.3f} {:>7} {:>9.2f} {:>9.2f} {:>9.2f} "
      "{:>9.2f} {:>6.1f}{} {}\n",
      format_size(p.params.bytes), p.params.count, m.time_s.mean * 1e6, m.algbw_GBps, m.busbw_GBps,
      m.wrong, m.time_s.p50 * 1e6, m.time_s.p99 * 1e6, skew.p50 * 1e6, skew.p95 * 1e6,
      100 * p.collectives.wait_fraction, plain, lags);
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
