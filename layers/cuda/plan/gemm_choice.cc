// The group's GEMM choice (gemm_choice.h): host-only arithmetic, unit-tested without a GPU.
#include "layers/cuda/plan/gemm_choice.h"

#include <algorithm>

namespace tpb {

int fastest_candidate(const std::vector<double>& times) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(times.size()); ++i)
    if (times[i] > 0 && (best < 0 || times[i] < times[best])) best = i;
  return best;
}

double group_time(const std::vector<std::vector<double>>& per_rank, int i) {
  double worst = 0;
  for (const std::vector<double>& r : per_rank) {
    const double t = i < static_cast<int>(r.size()) ? r[i] : -1.0;
    if (t <= 0) return -1.0;
    worst = std::max(worst, t);
  }
  return per_rank.empty() ? -1.0 : worst;
}

int agreed_candidate(const std::vector<std::vector<double>>& per_rank) {
  std::size_t n = 0;
  for (const std::vector<double>& r : per_rank) n = std::max(n, r.size());
  std::vector<double> group(n);
  for (std::size_t i = 0; i < n; ++i) group[i] = group_time(per_rank, static_cast<int>(i));
  return fastest_candidate(group);
}

std::vector<int64_t> tuning_rows(int64_t max_rows) {
  std::vector<int64_t> rows;
  for (int64_t m = 1; m < max_rows; m *= 2) rows.push_back(m);
  if (max_rows >= 1) rows.push_back(max_rows);
  return rows;
}

int64_t tuned_rows_for(int64_t m, const std::vector<int64_t>& tuned) {
  int64_t above = -1, largest = -1;
  for (int64_t t : tuned) {
    if (t >= m && (above < 0 || t < above)) above = t;
    largest = std::max(largest, t);
  }
  return above >= 0 ? above : largest;
}

}  // namespace tpb
