// plan_gather: windows cut from the rank-major whole, so ranks with little to send share one
// round (the usual case: one MPI_Gatherv) and a rank with more than a window spans several.
#include "harness/mpi/gather_plan.h"

#include <algorithm>

#include "base/errors.h"

namespace tpb {

GatherPlan plan_gather(const std::vector<long long>& sizes, long long window) {
  TPB_ASSERT(window >= 1 && window <= INT_MAX, "gather window outside 1..INT_MAX");
  GatherPlan p;
  const std::size_t n = sizes.size();
  p.starts.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    TPB_ASSERT(sizes[r] >= 0, "negative gather size");
    p.starts[r] = p.total;
    p.total += sizes[r];
  }
  for (long long first = 0; first < p.total; first += window) {
    const long long last = std::min(p.total, first + window);
    GatherPlan::Window w{first, std::vector<int>(n, 0), std::vector<int>(n, 0)};
    for (std::size_t r = 0; r < n; ++r) {
      const long long lo = std::max(first, p.starts[r]);
      const long long hi = std::min(last, p.starts[r] + sizes[r]);
      if (hi <= lo) continue;
      w.counts[r] = static_cast<int>(hi - lo);
      w.displs[r] = static_cast<int>(lo - first);
    }
    p.windows.push_back(std::move(w));
  }
  return p;
}

}  // namespace tpb
