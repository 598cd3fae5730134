// Order statistics over raw samples. Percentiles follow numpy's default ("linear") so that a
// reader can recompute every summary in results.json from the raw samples kept beside it.
#include "harness/analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tpb {
namespace {

// Linear interpolation on already-sorted, non-empty values; p in percent, clamped.
double interp_sorted(const std::vector<double>& v, double p) {
  const double h = (static_cast<double>(v.size()) - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  if (lo + 1 >= v.size()) return v.back();
  return v[lo] + (h - static_cast<double>(lo)) * (v[lo + 1] - v[lo]);
}

}  // namespace

// p is in percent, [0, 100], as in numpy.percentile; out-of-range p is clamped. With sorted
// values v and h = (n-1) * p/100, the result is v[floor(h)] + frac(h) * (v[floor(h)+1] -
// v[floor(h)]). Empty input has no percentile: NaN, which the results write as null.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return kNoValue;
  std::sort(v.begin(), v.end());
  return interp_sorted(v, p);
}

double lower_median(std::vector<double> v) {
  if (v.empty()) return kNoValue;
  const std::size_t k = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

Summary summarize(const std::vector<double>& v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) {
    s.p50 = s.p90 = s.p95 = s.p99 = s.mean = s.min = s.max = kNoValue;
    return s;
  }
  // Sort once rather than once per percentile.
  std::vector<double> sorted(v);
  std::sort(sorted.begin(), sorted.end());
  s.p50 = interp_sorted(sorted, 50);
  s.p90 = interp_sorted(sorted, 90);
  s.p95 = interp_sorted(sorted, 95);
  s.p99 = interp_sorted(sorted, 99);
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  return s;
}

MinMeanMax min_mean_max(const std::vector<double>& v) {
  MinMeanMax m;
  if (v.empty()) return {kNoValue, kNoValue, kNoValue};
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  m.min = *lo;
  m.max = *hi;
  m.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return m;
}

}  // namespace tpb
