#include "harness/report/compare/compare_diff.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/enum_names.h"
#include "harness/analysis/straggler_cause.h"

namespace tpb {

namespace {

// Per measured step, means over the point's ranks.
struct PerStep {
  double compute = 0, transfer = 0, wait = 0, outside = 0;
};

PerStep per_step(const PointRecord& p) {
  PerStep s;
  const auto& ranks = *p.ranks;
  const double n = static_cast<double>(ranks.size()) * static_cast<double>(p.params.steps);
  for (const RankRecord& r : ranks) {
    s.compute += r.compute_s / n;
    s.transfer += r.transfer_s / n;
    s.wait += r.wait_s / n;
    s.outside += r.host_gap_fraction * r.wall_s / n;
  }
  return s;
}

// The point as one "rank" of straggler_cause: its ops' mean time per step, its time outside
// the ops, and (once, from the point that prices them) each op's intensity.
CauseRank as_rank(const PointRecord& p, int rank, double outside, CauseInput& in) {
  CauseRank c;
  c.rank = rank;
  c.outside_ops_s_per_step = outside;
  for (const OpRecord& o : p.ops.value_or(std::vector<OpRecord>{})) {
    const auto op = enum_from_name<Op>(kOpNames, o.op);
    if (!op) continue;
    const auto i = static_cast<std::size_t>(*op);
    c.op_s_per_step[i] = o.time_s_per_step;
    if (o.bytes_per_step && o.flops_per_step && *o.bytes_per_step > 0) {
      in.priced[i] = true;
      in.intensity[i] = *o.flops_per_step / *o.bytes_per_step;
    }
  }
  c.device = "point";
  return c;
}

// When the slower point's largest extra part is in the all-reduces, that is the verdict: the
// interconnect (transfer) or the ranks' imbalance (wait), not the ops.
void in_collectives(CompareDiff& d, double sign) {
  const double compute = sign * d.compute_s, outside = sign * d.outside_ops_s;
  const double transfer = sign * d.transfer_s, wait = sign * d.wait_s;
  if (transfer > std::max({compute, outside, wait, 0.0})) {
    d.kind = "transfer";
    d.text = fmt::format(
        "its extra time is mostly in the all-reduces' own transfer (+{:.4g} ms per step): the "
        "interconnect or the collective, not the ops",
        1e3 * transfer);
  } else if (wait > std::max({compute, outside, 0.0})) {
    d.kind = "wait";
    d.text = fmt::format(
        "its extra time is mostly waiting in the all-reduces (+{:.4g} ms per step): its ranks "
        "are further apart (diagnose names the late one)",
        1e3 * wait);
  }
}

// A "wait" diff says which rank of the slower point its group waits for, and why, where that
// point's own straggler.cause found a cause: the diff then ends where diagnose would.
void name_the_late_rank(CompareDiff& d, const PointRecord& slower) {
  if (d.kind != "wait" || !slower.straggler || !slower.straggler->cause) return;
  const StragglerCauseRecord& c = *slower.straggler->cause;
  if (c.rank < 0 || c.kind == "no_excess" || c.kind == "no_peers") return;
  d.late_rank = c.rank;
  d.late_kind = c.kind;
  d.text = fmt::format("{}; the late one is rank {}: {}",
                       d.text.substr(0, d.text.find(" (diagnose")), c.rank, c.text);
}

bool comparable(const PointRecord& p) {
  return p.status == PointStatus::ok && p.params.phase != "serve" && p.ranks && !p.ranks->empty() &&
         p.params.steps > 0 && p.metrics;
}

}  // namespace

std::optional<CompareDiff> compare_diff(const PointRecord& base, const std::string& base_run,
                                        const PointRecord& p, const std::string& run) {
  if (!comparable(base) || !comparable(p)) return std::nullopt;
  const PerStep a = per_step(base), b = per_step(p);
  CompareDiff d;
  d.step_s = p.metrics->step_time_s.mean - base.metrics->step_time_s.mean;
  d.compute_s = b.compute - a.compute;
  d.transfer_s = b.transfer - a.transfer;
  d.wait_s = b.wait - a.wait;
  d.outside_ops_s = b.outside - a.outside;
  const bool later = d.step_s >= 0;
  d.slower = later ? run : base_run;
  CauseInput in;
  const MetricsRecord& m = *(later ? p : base).metrics;
  in.ridge = m.ridge;
  in.ranks = {as_rank(base, 0, a.outside, in), as_rank(p, 1, b.outside, in)};
  in.straggler = later ? 1 : 0;
  const StragglerCause c = straggler_cause(in);
  d.kind = c.kind;
  d.text = c.text;
  in_collectives(d, later ? 1.0 : -1.0);
  name_the_late_rank(d, later ? p : base);
  return d;
}

}  // namespace tpb
