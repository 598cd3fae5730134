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

int64_t HangWatchdog::now_ns() {
  const int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
  return std::max<int64_t>(t, 1);
}

void HangWatchdog::watch() {
  // An eighth of the timeout, at most 0.1 s: the report comes at most that late, and an idle
  // watchdog wakes 10 times a second, which costs the rank nothing measurable.
  const auto period = std::chrono::duration<double>(std::clamp(timeout_s_ / 8, 1e-3, 0.1));
  const auto limit_ns = static_cast<int64_t>(timeout_s_ * 1e9);
  std::unique_lock<std::mutex> lk(m_);
  while (!cv_.wait_for(lk, period, [this] { return stop_; })) {
    const int64_t t0 = started_ns_.load(std::memory_order_acquire);
    if (t0 == 0 || now_ns() - t0 <= limit_ns) continue;
    // The call armed at t0, or one armed after it: either way a call has been in flight for
    // longer than the timeout.
    const char* what = what_.load(std::memory_order_relaxed);
    fired_.store(true, std::memory_order_release);
    lk.unlock();
    on_expiry_(what);
    return;
  }
}

}  // namespace tpb
