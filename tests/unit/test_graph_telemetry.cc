// Host-side logic of the CUDA extras: the CUDA-graph stamp layout (graph_replay_slot and
// GraphSteps, on a fake device that replays captured marks as the stamp kernel does), the
// null telemetry and clock lock of non-GPU backends, and the CPU-only BadInputs.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "base/errors.h"
#include "harness/backends/registry.h"
#include "harness/backends/telemetry.h"
#include "harness/config/run_spec.h"
#include "harness/drive/graph_steps.h"
#include "harness/drive/mem_contender.h"
#include "harness/drive/session/injector.h"
#include "layers/cpu/cpu_device.h"
#include "tests/support/null_device.h"

namespace tpb {
namespace {

// Marks are a counter; while capturing they are recorded, and replay() writes each at
// graph_replay_slot(slot, r, stride), then advances r, as timer_kernels.cu does on a GPU.
class FakeGraphDevice final : public test::NullDevice {
 public:
  FakeGraphDevice() { caps_ = {"fake", "fake", {DType::fp32}, true, 1e-9, 1e9, 1e6}; }
  void reserve_marks(std::size_t n) override { slots_.assign(n, -1); }
  void mark(std::size_t slot) override {
    if (capturing_)
      captured_.push_back(slot);
    else
      slots_.at(slot) = ++now_;
  }
  void collect_marks(std::size_t first, std::size_t count, int64_t* out) override {
    for (std::size_t i = 0; i < count; ++i) out[i] = slots_.at(first + i);
  }
  void synchronize() override {}
  bool supports_graphs() const override { return true; }
  void begin_capture() override { capturing_ = true; }
  void end_capture(std::size_t stride) override {
    capturing_ = false;
    stride_ = stride;
    replay_ = 0;
  }
  void replay() override {
    for (std::size_t s : captured_) slots_.at(graph_replay_slot(s, replay_, stride_)) = ++now_;
    ++replay_;
  }
  void release_graph() noexcept override { ++released; }
  int released = 0;

 private:
  std::vector<int64_t> slots_;
  std::vector<std::size_t> captured_;
  bool capturing_ = false;
  std::size_t stride_ = 0, replay_ = 0;
  int64_t now_ = 0;
};

TEST(CudaGraph, ReplaySlotArithmetic) {
  EXPECT_EQ(graph_replay_slot(7, 0, 10), 7u);
  EXPECT_EQ(graph_replay_slot(7, 1, 10), 17u);
  EXPECT_EQ(graph_replay_slot(7, 5, 10), 57u);
}

TEST(CudaGraph, EveryReplayStampsItsOwnSegments) {
  FakeGraphDevice dev;
  Timeline tl(dev, 64);
  // A warm-up step, run eagerly.
  {
    Scoped step(tl, Op::step, 0, -1);
    Scoped a(tl, Op::rmsnorm_attn, 0, -1);
  }
  const std::size_t warm = tl.size();
  GraphSteps g(dev, tl);
  g.capture([&] {
    { Scoped a(tl, Op::qkv_proj, 0, 0); }
    { Scoped b(tl, Op::allreduce_attn, 0, 0); }
    { Scoped c(tl, Op::down_proj, 1, 0); }
  });
  EXPECT_EQ(g.block_size(), 3u);
  EXPECT_EQ(tl.size(), warm);  // the capture's own segments are dropped
  int before = 0;
  for (int s = 0; s < 4; ++s) g.replay_step(s, [&] { ++before; });
  EXPECT_EQ(before, 4);
  ASSERT_EQ(tl.size(), warm + 4 * 4);

  const std::vector<SegmentRecord> r = tl.resolve();
  ASSERT_EQ(r.size(), tl.size());
  const Op block[] = {Op::qkv_proj, Op::allreduce_attn, Op::down_proj};
  for (int s = 0; s < 4; ++s) {
    const SegmentRecord& step = r[warm + 4 * s];
    EXPECT_EQ(step.op, Op::step);
    EXPECT_EQ(step.step, s);
    double prev = step.t0;
    for (int j = 0; j < 3; ++j) {
      const SegmentRecord& seg = r[warm + 4 * s + 1 + j];
      EXPECT_EQ(seg.op, block[j]);
      EXPECT_EQ(seg.step, s);
      EXPECT_EQ(seg.collective, j == 1 ? 1 : 0);
      // Stamped by this replay: after the step opened and the previous segment closed, and
      // inside the step.
      EXPECT_GT(seg.t0, prev);
      EXPECT_GT(seg.t1, seg.t0);
      EXPECT_LT(seg.t1, step.t1);
      prev = seg.t1;
    }
    if (s > 0) EXPECT_GT(step.t0, r[warm + 4 * (s - 1)].t1);
  }
}

// The graph is released when the steps that replay it end, normally or by a collective timeout
// thrown out of a replay, so it is gone before the point's collective is finalised.
TEST(CudaGraph, TheGraphGoesWithItsSteps) {
  FakeGraphDevice dev;
  Timeline tl(dev, 64);
  {
    GraphSteps g(dev, tl);
    g.capture([&] { Scoped a(tl, Op::allreduce_attn, 0, 0); });
    g.replay_step(0, [] {});
    EXPECT_EQ(dev.released, 0);
  }
  EXPECT_EQ(dev.released, 1);
  FakeGraphDevice dev2;
  Timeline tl2(dev2, 64);
  try {
    GraphSteps g(dev2, tl2);
    g.capture([&] { Scoped a(tl2, Op::allreduce_attn, 0, 0); });
    g.replay_step(0, [] { throw CollectiveTimeout("the all-reduce did not complete"); });
  } catch (const CollectiveTimeout&) {
  }
  EXPECT_EQ(dev2.released, 1);
}

// The progress board under --cuda-graph: every position a rank publishes, in order.
class CountingSink final : public ProgressSink {
 public:
  struct Entry {
    int step, layer;
    Op op;
  };
  void enter(int step, int layer, Op op) override { entered.push_back({step, layer, op}); }
  void leave() override { ++left; }
  std::vector<Entry> entered;
  int left = 0;
};

// Each replay publishes its first collective, entered before the launch and left after the
// sync, so the board's count moves on with every replayed step (a rank that stops replaying is
// seen behind); the capture, which runs nothing, publishes nothing, and the timeline keeps its
// sink for the eager steps after. Before, the board was detached at capture and never heard
// from again: a hang in the replays read "every rank on this host arrived".
TEST(CudaGraph, ReplaysPublishTheirProgress) {
  FakeGraphDevice dev;
  Timeline tl(dev, 64);
  CountingSink sink;
  tl.set_progress_sink(&sink);
  {
    Scoped step(tl, Op::step, 0, -1);
    Scoped a(tl, Op::allreduce_mlp, 1, -1);  // a warm-up collective, eager
  }
  ASSERT_EQ(sink.entered.size(), 1u);
  GraphSteps g(dev, tl);
  g.capture([&] {
    { Scoped a(tl, Op::qkv_proj, 0, 0); }
    { Scoped b(tl, Op::allreduce_attn, 0, 0); }
    { Scoped c(tl, Op::allreduce_mlp, 0, 0); }
  });
  EXPECT_EQ(sink.entered.size(), 1u);  // nothing from the capture
  EXPECT_EQ(tl.progress_sink(), &sink);
  int entered_before_launch = 0;
  for (int s = 0; s < 3; ++s)
    g.replay_step(s, [&] { entered_before_launch += sink.entered.size() == 1u + s; });
  EXPECT_EQ(entered_before_launch, 3);  // `before` (host work, a held rank) precedes the enter
  ASSERT_EQ(sink.entered.size(), 4u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(sink.entered[1 + s].step, s);
    EXPECT_EQ(sink.entered[1 + s].layer, 0);
    EXPECT_EQ(sink.entered[1 + s].op, Op::allreduce_attn);
  }
  EXPECT_EQ(sink.left, 4);
}

TEST(CudaGraph, CpuBackendHasNoGraphs) {
  DeviceOptions o;
  CpuDevice cpu(o);
  EXPECT_FALSE(cpu.supports_graphs());
  EXPECT_THROW(cpu.begin_capture(), std::logic_error);
}

std::string error_of(const nlohmann::json& cfg, int world = 2) {
  try {
    resolve_run_spec(cfg, world, TPB_SOURCE_DIR "/configs");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(CudaGraph, OptionNeedsTheCudaBackend) {
  EXPECT_EQ(error_of({{"cuda_graph", true}}), "--cuda-graph: needs --backend cuda (or model)");
  EXPECT_NE(error_of({{"cuda_graph", true}, {"backend", "cuda"}, {"warmup", 0}}).find("--warmup"),
            std::string::npos);
  EXPECT_NE(error_of({{"cuda_graph", true}, {"backend", "cuda"}, {"collective", "mpi"}})
                .find("--collective nccl"),
            std::string::npos);
  EXPECT_NE(error_of({{"cuda_graph", true},
                      {"backend", "cuda"},
                      {"inject", {"rank=0:jitter_p=0.5:jitter_us=10"}}})
                .find("jitter"),
            std::string::npos);
  const RunSpec s =
      resolve_run_spec({{"cuda_graph", "true"}, {"backend", "cuda"}, {"collective", "mpi"}}, 1,
                       TPB_SOURCE_DIR "/configs");
  EXPECT_TRUE(s.cuda_graph);  // tp = 1: the mpi collective does nothing, so it captures
  EXPECT_EQ(run_spec_to_json(s)["cuda_graph"], true);
}

TEST(SmClock, IsBadInputOnTheCpuBackend) {
  EXPECT_EQ(error_of({{"inject", {"rank=1:sm_clock=1200"}}}),
            "--inject: sm_clock needs --backend cuda (or model)");
  EXPECT_EQ(error_of({{"inject", {"rank=1:sm_clock=1200"}}, {"backend", "cuda"}}), "");
  EXPECT_EQ(error_of({{"inject", {"rank=1:sm_clock=emulate@0.3"}}}),
            "--inject: sm_clock needs --backend cuda (or model)");
  EXPECT_EQ(error_of({{"inject", {"rank=1:sm_clock=emulate@0.3"}}, {"backend", "cuda"}}), "");
}

TEST(Telemetry, CpuSamplerSaysWhyItHasNothing) {
  DeviceOptions o;
  CpuDevice cpu(o);
  auto t = make_telemetry(cpu);
  t->start();
  const auto j = t->stop();
  EXPECT_EQ(j["available"], false);
  EXPECT_EQ(j["reason"], "no device telemetry on the cpu backend");
  EXPECT_EQ(t->mean_utilization(), -1);
  InjectSpec inj;
  {
    ScopedSmClock none(*t, cpu, inj);
    EXPECT_FALSE(none.applied());
    EXPECT_TRUE(none.to_json().is_null());
  }
  inj.sm_clock_mhz = 1400;
  ScopedSmClock lock(*t, cpu, inj);
  EXPECT_FALSE(lock.applied());
  const auto lj = lock.to_json();
  EXPECT_EQ(lj["form"], "locked");
  EXPECT_EQ(lj["requested_mhz"], 1400);
  EXPECT_EQ(lj["applied"], false);
  EXPECT_NE(lj["reason"].get<std::string>().find("cpu backend"), std::string::npos);
}

TEST(MemContend, CpuUsesTheHostThread) {
  DeviceOptions o;
  CpuDevice cpu(o);
  EXPECT_EQ(cpu.start_bandwidth_hog(1 << 20), nullptr);
  EXPECT_GE(mem_contend_buffer_bytes(1e6), static_cast<std::size_t>(128e6));
  EXPECT_EQ(mem_contend_buffer_bytes(100e6), static_cast<std::size_t>(400e6));
  MemContender hog(1 << 20);
  for (int i = 0; i < 1000 && hog.bytes_moved() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(hog.bytes_moved(), 0);
}

}  // namespace
}  // namespace tpb
