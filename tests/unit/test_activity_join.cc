// ActivityJoin and fill_intervals (layers/cuda/activity): the host side of CUDA per-op times,
// fed the records CUPTI would deliver, in the orders it may deliver them.
#include <gtest/gtest.h>

#include <vector>

#include "layers/cuda/activity/activity_join.h"

namespace tpb {
namespace {

TEST(ActivityJoin, AnOpSpansItsWorkFromFirstStartToLastEnd) {
  ActivityJoin j;
  // Op 7 launched two kernels (calls 10 and 11, as a cuBLAS GEMM and its epilogue might);
  // the kernel records come before the correlation records, as buffers may hand them over.
  j.add_work(11, 1500, 1900);
  j.add_work(10, 1000, 1400);
  j.add_external(10, 7);
  j.add_external(11, 7);
  j.add_external(12, 8);  // op 8's call
  j.add_work(12, 2000, 2100);
  j.join();
  EXPECT_EQ(j.interval(7), (std::pair<int64_t, int64_t>{1000, 1900}));
  EXPECT_EQ(j.interval(8), (std::pair<int64_t, int64_t>{2000, 2100}));
  EXPECT_EQ(j.unclaimed(), 0u);
}

TEST(ActivityJoin, AnOpIsLaunchedWhenItsFirstWorksCallReturned) {
  ActivityJoin j;
  // Op 4: calls 30 and 31; 31's kernel ran first (a copy queued on another path may), so the
  // op's launch is 31's return. Op 5's call left no launch record: unknown, 0.
  j.add_work(30, 800, 900);
  j.add_launch(31, 690);
  j.add_work(31, 700, 750);
  j.add_launch(30, 650);
  j.add_external(30, 4);
  j.add_external(31, 4);
  j.add_external(32, 5);
  j.add_work(32, 1000, 1100);
  j.join();
  EXPECT_EQ(j.launched(4), 690);
  EXPECT_EQ(j.launched(5), 0);
  EXPECT_EQ(j.launched(6), 0);  // no such op
  ActivitySlots slots;
  slots.reserve(2);
  const uint64_t id = slots.begin(0);
  j.add_external(40, id);
  j.add_launch(40, 1200);
  j.add_work(40, 1250, 1300);
  j.join();
  int64_t ns[2], launched[1] = {-1};
  fill_intervals(slots, j, 0, 2, ns, launched);
  EXPECT_EQ(ns[0], 1250);
  EXPECT_EQ(launched[0], 1200);
}

TEST(ActivityJoin, WorkNoOpLaunchedIsUnclaimedAndAnOpWithoutWorkHasNoInterval) {
  ActivityJoin j;
  j.add_work(20, 100, 200);  // a stamp kernel, or a graph replay's kernel: no op pushed
  j.add_external(21, 3);     // op 3's call launched nothing
  j.join();
  EXPECT_EQ(j.unclaimed(), 1u);
  EXPECT_EQ(j.interval(3), (std::pair<int64_t, int64_t>{0, 0}));
}

TEST(ActivityJoin, AJoinConsumesItsRecordsSoAnotherDoesNotCountThemTwice) {
  ActivityJoin j;
  j.add_external(1, 5);
  j.add_work(1, 10, 20);
  j.join();
  j.add_work(2, 30, 40);  // call 2's correlation record went with the first join: unclaimed
  j.join();
  EXPECT_EQ(j.interval(5), (std::pair<int64_t, int64_t>{10, 20}));
  EXPECT_EQ(j.unclaimed(), 1u);
}

TEST(ActivityJoin, FillIntervalsAnswersPerSlotPairAndForgetsOlderOps) {
  ActivitySlots slots;
  slots.reserve(8);                   // four pairs
  const uint64_t a = slots.begin(0);  // pair 0
  const uint64_t b = slots.begin(4);  // pair 2; pairs 1 and 3 are stamped segments
  EXPECT_EQ(slots.begin(8), 0u);      // past the reserve: no op
  ActivityJoin j;
  j.add_external(1, a);
  j.add_work(1, 100, 150);
  j.add_external(2, b);
  j.add_work(2, 300, 380);
  j.join();
  std::vector<int64_t> ns(8, -1);
  fill_intervals(slots, j, 0, 8, ns.data());
  EXPECT_EQ(ns, (std::vector<int64_t>{100, 150, 0, 0, 300, 380, 0, 0}));
  // A later collect from pair 2 on: op a is forgotten, b kept.
  fill_intervals(slots, j, 4, 4, ns.data());
  EXPECT_EQ(ns[0], 300);
  EXPECT_EQ(j.interval(a), (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(j.ops(), 1u);
}

TEST(ActivityJoin, AReusedSlotReadsOnlyItsNewOp) {
  // Timeline::clear() reuses slots; the pair's new op has a new id, so the old op's records,
  // still held, never leak into it.
  ActivitySlots slots;
  slots.reserve(2);
  const uint64_t old_op = slots.begin(0);
  const uint64_t new_op = slots.begin(0);
  EXPECT_NE(old_op, new_op);
  ActivityJoin j;
  j.add_external(1, old_op);
  j.add_work(1, 10, 90);
  j.add_external(2, new_op);
  j.add_work(2, 500, 520);
  j.join();
  int64_t ns[2];
  fill_intervals(slots, j, 0, 2, ns);
  EXPECT_EQ(ns[0], 500);
  EXPECT_EQ(ns[1], 520);
}

}  // namespace
}  // namespace tpb
