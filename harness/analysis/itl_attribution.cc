// The gaps and their producing steps, the medians of each part, and the tail's excess.
#include "harness/analysis/itl_attribution.h"

#include <algorithm>
#include <array>
#include <limits>

#include "harness/analysis/stats.h"

namespace tpb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Parts = std::array<double, 5>;  // prefill, imbalance, host, transfer, bandwidth

Parts parts_of(const StepParts& s) {
  return {s.prefill_s, s.imbalance_s, s.host_s, s.transfer_s, s.decode_s};
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
      "straggler's extra compute (max - lower median over ranks), collective transfer, and the "
      "rest of the compute divided between prefill and decode rows by their per-op roofline "
      "time; prefill, imbalance and host count in full, transfer and decode compute by their "
      "excess over their medians across all gaps";
  a.decode_step_p50_s = median_duration(steps, false);
  a.prefill_step_p50_s = median_duration(steps, true);
  std::vector<ItlGap> g;
  for (const ItlGap& x : all)
    if (x.step >= 0 && static_cast<std::size_t>(x.step) < steps.size()) g.push_back(x);
  a.shares = {kNaN, kNaN, kNaN, kNaN, kNaN};
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
  Parts excess{};
  for (const ItlGap& x : g) {
    if (x.gap_s < a.threshold_s) continue;
    ++a.samples;
    const Parts p = parts_of(steps[static_cast<std::size_t>(x.step)]);
    for (std::size_t k = 0; k < p.size(); ++k) excess[k] += std::max(0.0, p[k] - median[k]);
  }
  for (double e : excess) a.excess_s += e;
  if (a.excess_s > 0)
    a.shares = {excess[0] / a.excess_s, excess[1] / a.excess_s, excess[2] / a.excess_s,
                excess[3] / a.excess_s, excess[4] / a.excess_s};
  return a;
}

}  // namespace tpb
