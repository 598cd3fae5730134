// The watchdog's thread: a timed wait on its stop flag, then one look at the call in flight.
#include "collectives/hang_watchdog.h"

#include <algorithm>
#include <chrono>

namespace tpb {

HangWatchdog::HangWatchdog(double timeout_s, Expiry on_expiry)
    : timeout_s_(timeout_s), on_expiry_(std::move(on_expiry)), thread_([this] { watch(); }) {}

HangWatchdog::~HangWatchdog() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HangWatchdog::watch() {
  // An eighth of the timeout, at most 0.1 s: the report comes at most two periods late, and an
  // idle watchdog wakes 10 times a second, which costs the rank nothing measurable.
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::duration<double>(std::clamp(timeout_s_ / 8, 1e-3, 0.1));
  const auto limit = std::chrono::duration<double>(timeout_s_);
  uint64_t seen = 0;        // the counter at the last wake-up
  Clock::time_point since;  // when the call in flight was first seen
  std::unique_lock<std::mutex> lk(m_);
  while (!cv_.wait_for(lk, period, [this] { return stop_; })) {
    const uint64_t now_calls = calls_.load(std::memory_order_acquire);
    if (now_calls % 2 == 0) continue;  // nothing in flight
    if (now_calls != seen) {           // a new call since the last look: start its clock
      seen = now_calls;
      since = Clock::now();
      continue;
    }
    if (Clock::now() - since < limit) continue;
    // The call armed with `what` has been in flight for longer than the timeout.
    const char* what = what_.load(std::memory_order_relaxed);
    fired_.store(true, std::memory_order_release);
    lk.unlock();
    on_expiry_(what);
    return;
  }
}

}  // namespace tpb
