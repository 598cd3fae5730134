// The harness's own threads and signal ticks, written to be run under TSan (tests/sanitize.sh,
// preset tsan): the --inject mem_contend bandwidth hog (MemContender) beside a rank's timed
// work, its counter read from the main thread, and its shutdown at any moment; the hang
// watchdog's tick beside blocking collectives, armed and disarmed at call rate, firing once for
// a call in flight, stopped while armed, and its last word when the expiry handler is stuck; a
// ticker destroyed with a tick pending. In a plain build these are ordinary functional tests.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "base/host_clock.h"
#include "collectives/hang_watchdog.h"
#include "collectives/signal_ticker.h"
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

// What the expiry handler saw, written on the watchdog's thread and read on the test's.
struct Expiries {
  std::atomic<int> count{0};
  std::atomic<const char*> what{nullptr};
  std::atomic<int64_t> at_ns{0};  // steady clock at the firing
  HangWatchdog::Expiry handler() {
    return [this](const char* w) {
      what.store(w);
      at_ns.store(steady_now_ns());
      count.fetch_add(1);
    };
  }
};

TEST(HangWatchdog, CallsShorterThanTheTimeoutNeverFire) {
  // The hot path of a collective sweep: arm and disarm around every call, much faster than the
  // watchdog wakes; the calls are short, so nothing may fire however the wake-ups fall.
  Expiries e;
  HangWatchdog dog(0.05, e.handler());
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  long calls = 0;
  while (std::chrono::steady_clock::now() < until) {
    WatchedCall call(&dog, "short call");
    ++calls;
  }
  EXPECT_GT(calls, 1000);
  EXPECT_EQ(e.count.load(), 0);
  EXPECT_FALSE(dog.fired());
}

TEST(HangWatchdog, FiresOnceForACallInFlightPastTheTimeout) {
  Expiries e;
  HangWatchdog dog(0.05, e.handler());
  const int64_t armed_ns = steady_now_ns();
  dog.arm("stuck call");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (e.count.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a second firing would show
  dog.disarm();
  EXPECT_EQ(e.count.load(), 1);
  EXPECT_TRUE(dog.fired());
  ASSERT_NE(e.what.load(), nullptr);
  EXPECT_EQ(std::string(e.what.load()), "stuck call");
  // Never before the timeout: the watchdog times the call from its own first sight of it.
  EXPECT_GE(static_cast<double>(e.at_ns.load() - armed_ns) * 1e-9, 0.05);
}

TEST(HangWatchdog, StopsWhenDestroyedWhileArmed) {
  // A rank leaving a point with a call armed (an exception through the call): the watchdog is
  // destroyed before its deadline and must neither fire nor block the join.
  Expiries e;
  for (int i = 0; i < 3; ++i) {
    HangWatchdog dog(10.0, e.handler());
    dog.arm("left armed");
  }
  EXPECT_EQ(e.count.load(), 0);
}

TEST(HangWatchdogDeathTest, SaysItsLastWordWhenTheExpiryHandlerIsStuck) {
  // An expiry handler that never returns (as one blocked on a lock the interrupted call holds
  // would): the watchdog's next ticks cut into it, and two seconds on they write the last word
  // and end the process with its code. Without them the rank would hang forever.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        HangWatchdog dog(0.05,
                         [](const char*) {
                           for (;;) pause();
                         },
                         {"tpbench: error on rank 7: ", " did not complete (stuck report)", 3});
        dog.arm("stuck call");
        for (;;) pause();
      },
      testing::ExitedWithCode(3), "rank 7: stuck call did not complete \\(stuck report\\)");
}

bool tick_pending(SignalTicker::Line line) {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SignalTicker::signal_of(line)) == 1;
}

TEST(SignalTicker, TicksOnItsThreadAndDropsATickPendingAtDestruction) {
  const auto line = SignalTicker::Line::beacon;
  std::atomic<int> ticks{0};
  std::optional<SignalTicker> t(std::in_place, line, 0.002, [&ticks] { ticks.fetch_add(1); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ticks.load() < 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(ticks.load(), 3);
  {
    // Held back, a tick falls due and waits; the ticker ends while it waits, and the tick must
    // go with it rather than reach freed memory once the hold lifts.
    SignalTicker::Hold hold(line);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(tick_pending(line));
    t.reset();
    EXPECT_FALSE(tick_pending(line));
  }
  const int after = ticks.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(ticks.load(), after);
}

}  // namespace
}  // namespace tpb
