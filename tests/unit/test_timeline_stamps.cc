// --stamps collectives (layers/timeline.h): runs of compute between collectives, replaced by
// their ops where the device recorded each op, kept whole where it did not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layers/timeline.h"
#include "tests/support/null_device.h"

namespace tpb {
namespace {

// A device whose marks and activity records are numbered reads of a counter, so every
// record's ends are known exactly; `activity` says whether it keeps per-op records.
class CountingDevice final : public test::NullDevice {
 public:
  explicit CountingDevice(bool activity) : activity_(activity) {}
  void reserve_marks(std::size_t slots) override {
    marks_.assign(slots, 0);
    act_.assign(slots, 0);
    launch_.assign((slots + 1) / 2, 0);
  }
  void mark(std::size_t slot) override {
    marks_[slot] = ++clock_;
    ++stamps;
  }
  void collect_marks(std::size_t first, std::size_t count, int64_t* ns) override {
    for (std::size_t i = 0; i < count; ++i) ns[i] = marks_[first + i] * 1000;
  }
  // The op's launch call returns half a tick after the op's work starts.
  void activity_begin(std::size_t slot) override {
    act_[slot] = ++clock_;
    launch_[slot / 2] = clock_ * 1000 + 500;
  }
  void activity_end(std::size_t slot) override { act_[slot] = ++clock_; }
  bool collect_activity(std::size_t first, std::size_t count, int64_t* ns,
                        int64_t* launched) override {
    if (!activity_) return false;
    for (std::size_t i = 0; i < count; ++i) ns[i] = act_[first + i] * 1000;
    for (std::size_t p = 0; p < count / 2; ++p) launched[p] = launch_[(first / 2) + p];
    return true;
  }
  void synchronize() override {}
  void range_push(const char* name) override { ranges.emplace_back(name), ++pushes; }
  void range_pop() override {
    if (!ranges.empty()) ranges.pop_back();
    ++pops;
  }
  int stamps = 0;
  std::vector<std::string> ranges;  // the profiler ranges open now, outermost first
  int pushes = 0, pops = 0;

 private:
  bool activity_;
  std::vector<int64_t> marks_, act_, launch_;
  int64_t clock_ = 0;
};

// One step of one layer: three ops, an all-reduce, two ops, then the step's end.
void one_step(Timeline& tl) {
  const std::size_t s = tl.open(Op::step, 0, 0);
  for (Op op : {Op::rmsnorm_attn, Op::qkv_proj, Op::o_proj}) tl.close(tl.open(op, 0, 0));
  tl.close(tl.open(Op::allreduce_attn, 0, 0));
  for (Op op : {Op::rmsnorm_mlp, Op::down_proj}) tl.close(tl.open(op, 0, 0));
  tl.end_run();
  tl.close(s);
}

std::vector<Op> ops_of(const std::vector<SegmentRecord>& r) {
  std::vector<Op> v;
  for (const auto& x : r) v.push_back(x.op);
  return v;
}

TEST(TimelineStamps, OpsLevelStampsEveryOp) {
  CountingDevice dev(true);
  Timeline tl(dev, 16, StampLevel::ops);
  one_step(tl);
  EXPECT_EQ(dev.stamps, 2 * 7);
  EXPECT_EQ(ops_of(tl.resolve()),
            (std::vector<Op>{Op::step, Op::rmsnorm_attn, Op::qkv_proj, Op::o_proj,
                             Op::allreduce_attn, Op::rmsnorm_mlp, Op::down_proj}));
}

TEST(TimelineStamps, CollectivesLevelTakesOpsFromTheActivityRecord) {
  CountingDevice dev(true);
  Timeline tl(dev, 16, StampLevel::collectives);
  one_step(tl);
  EXPECT_EQ(dev.stamps, 2 * 4);  // the step, the all-reduce and the two runs around it
  const auto recs = tl.resolve();
  EXPECT_EQ(ops_of(recs), (std::vector<Op>{Op::step, Op::rmsnorm_attn, Op::qkv_proj, Op::o_proj,
                                           Op::allreduce_attn, Op::rmsnorm_mlp, Op::down_proj}));
  for (const auto& r : recs) EXPECT_LT(r.t0, r.t1);
  // The ops keep their own order on the one clock, inside the step.
  for (std::size_t i = 2; i < recs.size(); ++i) EXPECT_GT(recs[i].t0, recs[i - 1].t0);
  // Each op carries its launch's return, on the same clock; stamped segments carry none.
  for (const auto& r : recs)
    EXPECT_DOUBLE_EQ(r.launched, r.collective || r.op == Op::step ? 0.0 : r.t0 + 0.5e-6);
}

TEST(TimelineStamps, WithoutARecordEachRunStaysWhole) {
  CountingDevice dev(false);
  Timeline tl(dev, 16, StampLevel::collectives);
  one_step(tl);
  const auto recs = tl.resolve();
  ASSERT_EQ(ops_of(recs),
            (std::vector<Op>{Op::step, Op::compute, Op::allreduce_attn, Op::compute}));
  // The first run spans from before its first op to after its last: the stamps bracket it.
  EXPECT_LT(recs[1].t1, recs[2].t0);
  EXPECT_LT(recs[2].t1, recs[3].t0);
  EXPECT_LE(recs[3].t1, recs[0].t1);
}

TEST(TimelineStamps, ARunEndsWhereTheLayerChanges) {
  CountingDevice dev(false);
  Timeline tl(dev, 16, StampLevel::collectives);
  tl.close(tl.open(Op::residual_mlp, 0, 0));
  tl.close(tl.open(Op::rmsnorm_attn, 1, 0));
  tl.end_run();
  const auto recs = tl.resolve();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].layer, 0);
  EXPECT_EQ(recs[1].layer, 1);
}

// Every segment is one named profiler range (NVTX on CUDA), pushed at open and popped at
// close, at both stamp levels: an unbalanced push would nest every later range under it.
TEST(TimelineStamps, EachSegmentIsOneBalancedNamedRange) {
  for (StampLevel level : {StampLevel::ops, StampLevel::collectives}) {
    CountingDevice dev(true);
    Timeline tl(dev, 16, level);
    const std::size_t s = tl.open(Op::step, 0, 0);
    const std::size_t q = tl.open(Op::qkv_proj, 0, 0);
    EXPECT_EQ(dev.ranges, (std::vector<std::string>{"step", op_name(Op::qkv_proj)}));
    tl.close(q);
    tl.close(tl.open(Op::allreduce_attn, 0, 0));
    tl.end_run();
    tl.close(s);
    EXPECT_TRUE(dev.ranges.empty());
    EXPECT_EQ(dev.pushes, 3);
    EXPECT_EQ(dev.pops, 3);
  }
}

}  // namespace
}  // namespace tpb
