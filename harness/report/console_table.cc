// Console table. Columns answer the article's questions in order: how busy (occupancy),
// how useful (compute share), how close to the hardware (MBU, MFU vs its ceiling), and who
// waits for whom (wait, arrived last).
#include "harness/report/console_table.h"

#include <fmt/format.h>

#include <cmath>

namespace tpb {

namespace {

std::string header(const PointParams& par) {
  const bool decode = par.phase == "decode";
  return fmt::format("\n== {} {} batch={} {}={} tp={} {} {} layers={} ==\n", par.model, par.phase,
                     par.batch, decode ? "context" : "prompt", decode ? par.context : par.prompt,
                     par.tp, par.dtype, par.backend, par.layers);
}

std::string rank_rows(const std::vector<RankRecord>& ranks, int64_t straggler) {
  std::string out = fmt::format(
      "{:>5} {:>3} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>6}\n", "rank", "grp",
      "step_p50", "occup", "busy", "useful", "hostgap", "MBU", "MFU", "wait_s", "xfer_s", "last");
  for (const auto& r : ranks)
    out += fmt::format(
        "{:>4}{} {:>3} {:>8.3f}ms {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>8.5f} {:>9.4f} "
        "{:>9.4f} {:>6}\n",
        r.rank, r.rank == straggler ? "*" : " ", r.group, r.step_time_p50_s * 1e3,
        r.occupancy_sampled, r.busy_fraction, r.useful_fraction, r.host_gap_fraction, r.mbu, r.mfu,
        r.wait_s, r.transfer_s, r.arrived_last);
  return out;
}

// The --check verdict: against the host fp64 reference (run, 1.12.0) or the unsharded step
// (serve), and at TP > 1 the sharded step against the unsharded one as well.
std::string verification_line(const VerificationRecord& v) {
  std::string out = fmt::format(
      "verification: {} against the {} (max abs err {:.3g}, tolerance {:.3g}",
      v.passed ? "PASSED" : "FAILED", v.max_abs_ref ? "host fp64 reference" : "unsharded reference",
      v.max_abs_err, v.tolerance);
  if (v.tokens_match) out += fmt::format(", tokens {}", *v.tokens_match ? "match" : "DIFFER");
  if (const auto& s = v.sharded_vs_unsharded)
    out += fmt::format("); sharded vs unsharded tp=1: {} (max abs err {:.3g}, tolerance {:.3g}",
                       s->passed ? "PASSED" : "FAILED", s->max_abs_err, s->tolerance);
  return out + ")\n";
}

std::string summary_lines(const PointRecord& p) {
  const MetricsRecord& m = *p.metrics;
  std::string out =
      fmt::format("{:>5} {:>3} {:>8.3f}ms {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>8.5f}\n",
                  "all", "", m.step_time_s.p50 * 1e3, m.occupancy_sampled, m.busy_fraction,
                  m.useful_fraction, m.host_gap_fraction, m.mbu, m.mfu);
  out += fmt::format(
      "tokens/s {:.1f} | step p95 {:.3f} ms | intensity {:.2f} FLOP/B, ridge {:.1f} -> MFU "
      "ceiling {:.4f} | roofline {:.3f}\n",
      m.tokens_per_s, m.step_time_s.p95 * 1e3, m.intensity, m.ridge, m.mfu_ceiling,
      m.roofline_fraction);
  const CollectivesRecord& c = *p.collectives;
  const StragglerRecord& st = *p.straggler;
  const std::string who =
      st.rank ? fmt::format("straggler rank {} (last in {:.0f}%, excess compute {:+.3f})", *st.rank,
                            100 * st.arrived_last_share, st.excess_compute_fraction)
              : "no straggler (" + st.reason.value_or("none named") + ")";
  out += fmt::format(
      "collectives {} | skew p50 {:.1f} us p95 {:.1f} us max {:.1f} us{} | wait {:.1f}% of wall | "
      "{}\n",
      c.count, c.skew_s.p50 * 1e6, c.skew_s.p95 * 1e6, c.skew_s.max * 1e6,
      c.skew_uncertainty_s ? fmt::format(" (clock ±{:.1f} us)", *c.skew_uncertainty_s * 1e6) : "",
      100 * c.wait_fraction, who);
  if (st.cause && st.cause->kind != "no_peers") {
    const double share = st.costliest_share.value_or(NAN);
    out +=
        fmt::format("straggler cause (rank {}, {}): {}\n", st.cause->rank,
                    std::isfinite(share) ? fmt::format("{:.0f}% of its group's wait", 100 * share)
                                         : "its group never waited",
                    st.cause->text);
  }
  const ClockSyncRecord& cs = *p.clock_sync;
  out +=
      fmt::format("clock sync: max offset {:.3f} ms, uncertainty {:.1f} us, violations {}\n",
                  cs.max_offset_s * 1e3, cs.max_uncertainty_s * 1e6, cs.clock_condition_violations);
  if (p.verification) out += verification_line(*p.verification);
  out += fmt::format("peaks: {:.3g} FLOP/s, {:.3g} B/s ({})\n", m.peaks.flops, m.peaks.bw,
                     m.peaks.source);
  for (const auto& w : p.warnings.value_or(std::vector<std::string>{}))
    out += "warning: " + w + "\n";
  return out;
}

}  // namespace

std::string format_point_table(const PointRecord& p) {
  std::string out = header(p.params);
  if (p.status != PointStatus::ok)
    return out + fmt::format("status: {} ({})\n", point_status_name(p.status), p.reason);
  return out +
         rank_rows(p.ranks.value_or(std::vector<RankRecord>{}), p.straggler->rank.value_or(-1)) +
         summary_lines(p);
}

}  // namespace tpb
