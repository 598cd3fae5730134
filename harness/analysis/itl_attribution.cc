// The gaps and their producing steps, the medians of each part, and the tail's excess.
#include "harness/analysis/itl_attribution.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "harness/analysis/stats.h"

namespace tpb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// prefill, imbalance, host, transfer, decode compute (split into bandwidth and jitter at the end)
using Parts = std::array<double, 5>;
constexpr std::size_t kDecode = 4;

Parts parts_of(const StepParts& s) {
  return {s.prefill_s, s.imbalance_s, s.host_s, s.transfer_s, s.decode_s};
}

// The gaps' median ratio of decode compute to its roofline time: what this run's decode costs per
// unit of work. NaN when no step knows its roofline time.
double median_decode_ratio(const std::vector<ItlGap>& g, const std::vector<StepParts>& steps) {
  std::vector<double> r;
  for (const ItlGap& x : g) {
    const StepParts& s = steps[static_cast<std::size_t>(x.step)];
    if (s.decode_roofline_s > 0) r.push_back(s.decode_s / s.decode_roofline_s);
  }
  return r.empty() ? kNaN : percentile(r, 50);
}

double median_duration(const std::vector<StepParts>& steps, bool with_prefill) {
  std::vector<double> d;
  for (const StepParts& s : steps)
    if (s.has_prefill == with_prefill) d.push_back(s.duration_s);
  return d.empty() ? kNaN : percentile(d, 50);
}

}  // namespace

ItlAttribution attribute_itl(const std::vector<ItlGap>& all, const std::vector<StepParts>& steps) {
  ItlAttribution a;
  a.method =
      "gaps at or above the p99 ITL; each gap's producing step split into host gap, the "
      "straggler's extra busy time (max - lower median over ranks of compute plus the rank's own "
      "host time inside the step), collective transfer, and the "
      "rest of the compute divided between prefill and decode rows by their per-op roofline "
      "time; prefill, imbalance and host count in full, transfer and decode compute by their "
      "excess over their medians across all gaps; decode compute's excess is bandwidth as far as "
      "the step's decode work explains it (its decode rows' roofline time at the gaps' median "
      "ratio of compute to roofline time) and jitter beyond that";
  a.decode_step_p50_s = median_duration(steps, false);
  a.prefill_step_p50_s = median_duration(steps, true);
  std::vector<ItlGap> g;
  for (const ItlGap& x : all)
    if (x.step >= 0 && static_cast<std::size_t>(x.step) < steps.size()) g.push_back(x);
  a.shares = {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  if (g.empty()) {
    a.threshold_s = kNaN;
    return a;
  }
  std::vector<double> values;
  std::array<std::vector<double>, 5> by_part;
  for (const ItlGap& x : g) {
    values.push_back(x.gap_s);
    const Parts p = parts_of(steps[static_cast<std::size_t>(x.step)]);
    for (std::size_t k = 0; k < p.size(); ++k) by_part[k].push_back(p[k]);
  }
  a.threshold_s = percentile(values, 99);
  // The reference of each part: none for prefill, imbalance and host (a clean decode step has
  // none of them), the median across all gaps for transfer and decode compute.
  Parts median{};
  for (std::size_t k = 3; k < median.size(); ++k) median[k] = percentile(by_part[k], 50);
  const double ratio = median_decode_ratio(g, steps);
  Parts excess{};
  double jitter = 0;
  for (const ItlGap& x : g) {
    if (x.gap_s < a.threshold_s) continue;
    ++a.samples;
    const StepParts& s = steps[static_cast<std::size_t>(x.step)];
    const Parts p = parts_of(s);
    for (std::size_t k = 0; k < kDecode; ++k) excess[k] += std::max(0.0, p[k] - median[k]);
    // Without a roofline time the whole excess stays bandwidth, as the work cannot be judged.
    const double expected =
        std::isfinite(ratio) && s.decode_roofline_s > 0 ? ratio * s.decode_roofline_s : s.decode_s;
    const double explained = std::max(expected, median[kDecode]);
    excess[kDecode] += std::max(0.0, std::min(s.decode_s, explained) - median[kDecode]);
    jitter += std::max(0.0, s.decode_s - explained);
  }
  for (double e : excess) a.excess_s += e;
  a.excess_s += jitter;
  if (a.excess_s > 0)
    a.shares = {excess[0] / a.excess_s, excess[1] / a.excess_s, excess[2] / a.excess_s,
                excess[3] / a.excess_s, excess[4] / a.excess_s, jitter / a.excess_s};
  return a;
}

}  // namespace tpb
