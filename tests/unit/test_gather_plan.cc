// The trace gather's rounds (harness/mpi/gather_plan.h) for totals past INT_MAX, planned
// without allocating them: every count and displacement fits an int, and the windows tile
// each rank's bytes exactly once. The gather before them cast the running offset to int:
// rank 2's displacement below (2^31 + 4) came out negative.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "harness/mpi/gather_plan.h"

namespace tpb {
namespace {

// Each rank's pieces, in window order, must cover its bytes [0, size) end to end.
void expect_tiles(const GatherPlan& p, const std::vector<long long>& sizes, long long window) {
  std::vector<long long> next(sizes.size(), 0);
  long long first = 0;
  for (const GatherPlan::Window& w : p.windows) {
    EXPECT_EQ(w.first, first);
    long long moved = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      EXPECT_GE(w.counts[r], 0);
      EXPECT_GE(w.displs[r], 0);
      EXPECT_LE(static_cast<long long>(w.displs[r]) + w.counts[r], window) << "rank " << r;
      if (w.counts[r] == 0) continue;
      EXPECT_EQ(w.first + w.displs[r] - p.starts[r], next[r]) << "rank " << r;  // no gap
      next[r] += w.counts[r];
      moved += w.counts[r];
    }
    EXPECT_EQ(moved, std::min(window, p.total - first));  // the window is full but the last
    first += window;
  }
  EXPECT_EQ(next, sizes);
}

TEST(GatherPlan, PastIntMax) {
  // 2^31 + 4 + 3e9 + 7 bytes (a TP 8 serve trace of ~8k steps is of this order).
  const std::vector<long long> sizes{INT_MAX - 5LL, 10, 3'000'000'000LL, 0, 7};
  const GatherPlan p = plan_gather(sizes);
  EXPECT_EQ(p.total, INT_MAX - 5LL + 10 + 3'000'000'000LL + 7);
  EXPECT_EQ(p.starts[2], INT_MAX + 5LL);
  ASSERT_EQ(p.windows.size(), 3u);  // ceil(5,147,483,659 / 2,147,483,647)
  expect_tiles(p, sizes, INT_MAX);
  // Window 0 holds rank 0 whole and the first 5 bytes of rank 1.
  EXPECT_EQ(p.windows[0].counts[1], 5);
  EXPECT_EQ(p.windows[0].displs[1], INT_MAX - 5);
}

TEST(GatherPlan, SmallWindowsByHand) {
  // Whole: rank 0's 3 bytes at 0..2, rank 2's 5 at 3..7; windows of 4: [0, 4) and [4, 8).
  const std::vector<long long> sizes{3, 0, 5};
  const GatherPlan p = plan_gather(sizes, 4);
  ASSERT_EQ(p.windows.size(), 2u);
  EXPECT_EQ(p.windows[0].counts, (std::vector<int>{3, 0, 1}));
  EXPECT_EQ(p.windows[0].displs, (std::vector<int>{0, 0, 3}));
  EXPECT_EQ(p.windows[1].counts, (std::vector<int>{0, 0, 4}));
  EXPECT_EQ(p.windows[1].displs, (std::vector<int>{0, 0, 0}));
  expect_tiles(p, sizes, 4);
}

TEST(GatherPlan, NothingToGatherIsNoRound) {
  EXPECT_TRUE(plan_gather({0, 0}).windows.empty());
  EXPECT_EQ(plan_gather({1, 1}).windows.size(), 1u);  // the usual case: one MPI_Gatherv
}

}  // namespace
}  // namespace tpb
