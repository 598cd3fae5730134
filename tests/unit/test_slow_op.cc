// --inject slow_op where the op's time cannot be read as it runs (a device stream: the CUDA
// backend): the Injector spins (F - 1) x the op's warm-up median inside the op's own stamp,
// right after the op's work; on a backend that fuses the op into a neighbour's kernel (it has no
// stamp of its own), the pair's. A recording device stands in for the stream.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/self_collective.h"
#include "harness/config/inject_spec.h"
#include "harness/drive/session/injector.h"
#include "layers/timeline.h"
#include "tests/support/null_device.h"
#include "tp_model/tp_model.h"

namespace tpb {
namespace {

// Records the ops the test follows, and each spin with its seconds.
class StreamDevice final : public test::HeapDevice {
 public:
  explicit StreamDevice(bool fused) {
    caps_.backend = "stream";
    caps_.fused_elementwise = fused;
  }
  void rope(void*, int64_t, int64_t, int64_t, const AttnShape&, float, DType) override {
    calls.push_back("rope");
  }
  void kv_write(const void*, void*, void*, int64_t, int64_t, const AttnShape&, DType) override {
    calls.push_back("kv_write");
  }
  void attention_decode(const void*, const void*, const void*, void*, int64_t, const AttnShape&,
                        DType) override {
    calls.push_back("attention");
  }
  void busy_work(double s) override {
    calls.push_back("spin");
    spins.push_back(s);
  }
  std::vector<std::string> calls;
  std::vector<double> spins;
};

TpModelConfig small() {
  TpModelConfig cfg;
  cfg.shape.name = "slow-op-test";
  cfg.shape.hidden = 64;
  cfg.shape.n_layers = 2;
  cfg.shape.n_heads = 4;
  cfg.shape.n_kv_heads = 2;
  cfg.shape.head_dim = 16;
  cfg.shape.intermediate = 128;
  cfg.shape.vocab = 128;
  cfg.layers = 2;
  cfg.dtype = DType::bf16;
  cfg.phase = Phase::decode;
  cfg.batch = 2;
  cfg.context = 16;
  return cfg;
}

// Warm-up stamps of `op`: 1, 2 and 4 ms (median 2 ms).
std::vector<SegmentRecord> warmup(Op op) {
  std::vector<SegmentRecord> w;
  for (double d : {1e-3, 4e-3, 2e-3}) w.push_back({0.0, d, -1, 0, op, 0});
  return w;
}

// The spins one measured step and one warm-up step make, after the ops they follow.
struct Spun {
  std::vector<std::string> calls;
  std::vector<double> spins;
};

Spun run_step(const char* spec, bool fused, StampLevel level, Op warm, int step) {
  StreamDevice dev(fused);
  TpModel model(dev, small());
  Timeline tl(dev, 4096, level);
  Injector inj(inject_for_rank(parse_inject(spec), 0), dev, tl, 1);
  inj.calibrate(warmup(warm));
  dev.calls.clear();
  SelfCollective self;
  model.step(self, &tl, step, &inj);
  return {dev.calls, dev.spins};
}

TEST(SlowOp, SpinsTheWarmupMedianInsideTheOp) {
  const Spun s = run_step("rank=0:slow_op=attention@3", false, StampLevel::ops, Op::attention, 0);
  // Once per layer, right after the op's own work: (3 - 1) x 2 ms.
  EXPECT_EQ(s.calls, (std::vector<std::string>{"rope", "kv_write", "attention", "spin", "rope",
                                               "kv_write", "attention", "spin"}));
  ASSERT_EQ(s.spins.size(), 2u);
  EXPECT_DOUBLE_EQ(s.spins[0], 4e-3);
}

TEST(SlowOp, AFusedOpIsSlowedWithTheKernelThatCarriesIt) {
  // Stamps coarser than ops: the backend runs rope and kv_write as one kernel stamped as rope,
  // so kv_write has no warm-up stamp of its own and the pair's median is taken.
  const Spun s = run_step("rank=0:slow_op=kv_write@2", true, StampLevel::collectives, Op::rope, 0);
  EXPECT_EQ(s.calls, (std::vector<std::string>{"rope", "kv_write", "spin", "attention", "rope",
                                               "kv_write", "spin", "attention"}));
  ASSERT_EQ(s.spins.size(), 2u);
  EXPECT_DOUBLE_EQ(s.spins[0], 2e-3);
}

TEST(SlowOp, WarmupStepsAndOtherRanksStayClean) {
  EXPECT_TRUE(run_step("rank=0:slow_op=attention@3", false, StampLevel::ops, Op::attention, -1)
                  .spins.empty());
  EXPECT_TRUE(run_step("rank=1:slow_op=attention@3", false, StampLevel::ops, Op::attention, 0)
                  .spins.empty());
}

}  // namespace
}  // namespace tpb
