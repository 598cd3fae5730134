// The harness's own threads, written to be run under TSan (tests/sanitize.sh, preset tsan):
// the --inject mem_contend bandwidth hog (MemContender) beside a rank's timed work, its
// counter read from the main thread, and its shutdown at any moment. In a plain build these
// are ordinary functional tests.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "harness/drive/mem_contender.h"
#include "layers/cpu/cpu_device.h"
#include "layers/timeline.h"

namespace tpb {
namespace {

constexpr double kSmallLlc = 1 << 20;  // the contender sizes its buffers from the LLC (>= 128 MB)

TEST(MemContender, MovesBytesWhileTheMainThreadReadsTheCounter) {
  MemContender c(mem_contend_buffer_bytes(kSmallLlc));
  double seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (seen == 0 && std::chrono::steady_clock::now() < deadline) {
    seen = c.bytes_moved();  // concurrent with the thread's store
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(seen, 0.0);
  const double later = c.bytes_moved();
  EXPECT_GE(later, seen);  // monotone
}

TEST(MemContender, StopsWhenDestroyedAtOnce) {
  // Destruction racing the thread's start-up: stop_ must be seen, join must return.
  for (int i = 0; i < 3; ++i) MemContender c(mem_contend_buffer_bytes(kSmallLlc));
  SUCCEED();
}

TEST(MemContender, RunsBesideTimedWorkOnTheDevice) {
  // What point_runner does with --inject rank=R:mem_contend=1: the contender streams while
  // the rank stamps segments and spins in busy_work.
  CpuDevice dev{DeviceOptions{}};
  Timeline tl(dev, 64);
  MemContender c(mem_contend_buffer_bytes(kSmallLlc));
  for (int s = 0; s < 16; ++s) {
    Scoped seg(tl, Op::injected, 0, s);
    dev.busy_work(1e-3);
  }
  const auto recs = tl.resolve();
  ASSERT_EQ(recs.size(), 16u);
  for (const auto& r : recs) EXPECT_GE(r.t1 - r.t0, 1e-3 * 0.99);
}

}  // namespace
}  // namespace tpb
