// One pass over each rank's segments into per-step sums; collectives are split against the
// latest enter of their instance, exactly as the point's totals are (analysis.h).
#include "harness/analysis/step_breakdown.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "harness/analysis/stats.h"

namespace tpb {

std::map<CollectiveInstance, double> latest_enters(const std::vector<RankTrace>& ranks) {
  std::map<CollectiveInstance, double> latest;
  for (const RankTrace& r : ranks)
    for (const SegmentRecord& s : r.segs) {
      if (!s.collective || s.step < 0) continue;
      const CollectiveInstance k{s.step, s.layer, static_cast<int>(s.op)};
      auto [it, fresh] = latest.emplace(k, s.t0);
      if (!fresh) it->second = std::max(it->second, s.t0);
    }
  return latest;
}

std::vector<StepSplit> step_breakdown(const std::vector<RankTrace>& ranks) {
  const auto latest = latest_enters(ranks);
  std::map<int, StepSplit> steps;
  for (std::size_t ri = 0; ri < ranks.size(); ++ri)
    for (const SegmentRecord& s : ranks[ri].segs) {
      if (s.step < 0) continue;
      StepSplit& st = steps[s.step];
      st.step = s.step;
      st.ranks.resize(ranks.size());
      RankStepSplit& r = st.ranks[ri];
      if (s.op == Op::step) {
        r.t0 = s.t0;
        r.t1 = s.t1;
      } else if (s.collective) {
        const double l = latest.at({s.step, s.layer, static_cast<int>(s.op)});
        r.wait_s += wait_at_collective(s.t0, s.t1, l);
        r.transfer_s += transfer_at_collective(s.t0, s.t1, l);
      } else {
        r.compute_s += s.t1 - s.t0;
      }
    }
  std::vector<StepSplit> out;
  out.reserve(steps.size());
  for (auto& [k, st] : steps) {
    std::vector<double> compute, busy;
    for (RankStepSplit& r : st.ranks) {
      st.device_time_s = std::max(st.device_time_s, r.t1 - r.t0);
      r.host_s = std::max(0.0, r.t1 - r.t0 - r.compute_s - r.wait_s - r.transfer_s);
      compute.push_back(r.compute_s);
      busy.push_back(r.compute_s + r.host_s);
    }
    if (compute.empty()) {
      out.push_back(std::move(st));
      continue;
    }
    st.max_compute_s = *std::max_element(compute.begin(), compute.end());
    // percentile 50 by linear interpolation: the mean of the two middle values.
    st.median_compute_s = percentile(compute, 50);
    st.lower_median_compute_s = lower_median(compute);
    st.max_busy_s = *std::max_element(busy.begin(), busy.end());
    st.lower_median_busy_s = lower_median(busy);
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace tpb
