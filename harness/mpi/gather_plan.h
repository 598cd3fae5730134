// The rounds of MPI_Gatherv that gather per-rank byte strings whose total passes INT_MAX: MPI
// 3.1 (Open MPI 4.1, Debian's) counts and places bytes in int, and has no MPI_Gatherv_c.
#pragma once
#include <climits>
#include <vector>

namespace tpb {

// The gathered whole is every rank's bytes, rank after rank. Each window is a slice of it at
// most `window` bytes long, moved by one MPI_Gatherv into the root's buffer at `first`: rank r
// sends its `counts[r]` bytes of the slice (from byte first + displs[r] - starts[r] of its own
// data), which land at `displs[r]` from `first`. Counts and displacements stay below the
// window, so every int holds them. No window when every rank has nothing.
struct GatherPlan {
  struct Window {
    long long first = 0;
    std::vector<int> counts, displs;
  };
  std::vector<long long> starts;  // where each rank's bytes begin in the whole
  long long total = 0;
  std::vector<Window> windows;
};

// `sizes`: each rank's byte count. `window` in 1..INT_MAX.
GatherPlan plan_gather(const std::vector<long long>& sizes, long long window = INT_MAX);

}  // namespace tpb
