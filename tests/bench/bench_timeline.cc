// Cost of one Timeline stamp on the CPU path (issue 5 goal: under 50 ns). A segment is two
// stamps (open + close); the counter ns_per_stamp divides by two. The bare clock read and the
// bare Device::mark are measured alongside, so the timeline's own share is visible.
#include <benchmark/benchmark.h>

#include <atomic>

#include "layers/cpu/cpu_device.h"
#include "layers/timeline.h"

namespace tpb {
namespace {

constexpr std::size_t kSegments = 4096;  // one batch of segments between clear()s

CpuDevice& device() {
  static CpuDevice dev{DeviceOptions{}};
  return dev;
}

// Seconds per stamp when `stamps_per_iteration` stamps are taken in each iteration.
benchmark::Counter per_stamp(double stamps_per_iteration) {
  return benchmark::Counter(stamps_per_iteration, benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

void BM_SteadyClockRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(steady_now_ns());
  state.counters["s_per_stamp"] = per_stamp(1);
}
BENCHMARK(BM_SteadyClockRead);

void BM_DeviceMark(benchmark::State& state) {
  CpuDevice& dev = device();
  dev.reserve_marks(2 * kSegments);
  for (auto _ : state) {
    for (std::size_t i = 0; i < 2 * kSegments; ++i) dev.mark(i);
    benchmark::ClobberMemory();
  }
  state.counters["s_per_stamp"] = per_stamp(2.0 * kSegments);
}
BENCHMARK(BM_DeviceMark);

// A compute segment as the step driver records it: open (meta + stamp) and close (stamp).
void BM_TimelineSegment(benchmark::State& state) {
  Timeline tl(device(), kSegments);
  for (auto _ : state) {
    tl.clear();
    for (std::size_t i = 0; i < kSegments; ++i) {
      const std::size_t s = tl.open(Op::qkv_proj, static_cast<int>(i & 31), 0);
      tl.close(s);
    }
    benchmark::ClobberMemory();
  }
  state.counters["s_per_stamp"] = per_stamp(2.0 * kSegments);
}
BENCHMARK(BM_TimelineSegment);

// A collective segment with a progress sink attached: the hang board adds two relaxed
// stores per collective (collectives/progress_board); this sink does the same work.
class StoreSink final : public ProgressSink {
 public:
  void enter(int step, int layer, Op op) override {
    where_.store(static_cast<int64_t>(step) << 24 | layer << 8 | static_cast<int>(op),
                 std::memory_order_relaxed);
    inside_.store(1, std::memory_order_release);
  }
  void leave() override { inside_.store(0, std::memory_order_release); }

 private:
  std::atomic<int64_t> where_{0};
  std::atomic<int> inside_{0};
};

void BM_TimelineCollectiveWithSink(benchmark::State& state) {
  Timeline tl(device(), kSegments);
  StoreSink sink;
  tl.set_progress_sink(&sink);
  for (auto _ : state) {
    tl.clear();
    for (std::size_t i = 0; i < kSegments; ++i) {
      const std::size_t s = tl.open(Op::allreduce_attn, static_cast<int>(i & 31), 0);
      tl.close(s);
    }
    benchmark::ClobberMemory();
  }
  state.counters["s_per_stamp"] = per_stamp(2.0 * kSegments);
}
BENCHMARK(BM_TimelineCollectiveWithSink);

// Resolving stamps into records happens once per point, outside the timed steps.
void BM_TimelineResolve(benchmark::State& state) {
  Timeline tl(device(), kSegments);
  for (std::size_t i = 0; i < kSegments; ++i) tl.close(tl.open(Op::o_proj, 0, 0));
  for (auto _ : state) benchmark::DoNotOptimize(tl.resolve());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kSegments));
}
BENCHMARK(BM_TimelineResolve);

}  // namespace
}  // namespace tpb
