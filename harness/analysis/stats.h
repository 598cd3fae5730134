// Order statistics over raw samples (kept raw in results so they can be recomputed).
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

namespace tpb {

// What a statistic of no samples is (the results write it as null).
inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct Summary {
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0, mean = 0, min = 0, max = 0;
  std::size_t n = 0;
};

// Percentile by linear interpolation between closest ranks (numpy's default "linear").
double percentile(std::vector<double> v, double p);
// Lower median: element (n-1)/2 of the sorted values. With 2 ranks it is the faster one,
// so "excess over the median" reads as excess over the typical (unslowed) rank.
double lower_median(std::vector<double> v);
Summary summarize(const std::vector<double>& v);

struct MinMeanMax {
  double min = 0, mean = 0, max = 0;
};
MinMeanMax min_mean_max(const std::vector<double>& v);

}  // namespace tpb
