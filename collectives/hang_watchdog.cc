// The watchdog's tick: one look at the call in flight, and the last word if its expiry is stuck.
#include "collectives/hang_watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "base/exit_restore.h"

namespace tpb {

namespace {

constexpr int64_t kLastWordAfterNs = 2'000'000'000;

int64_t monotonic_ns() {  // clock_gettime is async-signal-safe; std::chrono's clocks say nothing
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

void write_all(const char* s, std::size_t n) {
  while (n > 0) {
    const ssize_t k = write(STDERR_FILENO, s, n);
    if (k <= 0) return;
    s += k;
    n -= static_cast<std::size_t>(k);
  }
}

}  // namespace

// An eighth of the timeout, at most 0.1 s: the report comes at most two periods late, and an
// idle watchdog ticks 10 times a second, which costs the thread nothing measurable.
HangWatchdog::HangWatchdog(double timeout_s, Expiry on_expiry, LastWord last_word)
    : timeout_s_(timeout_s),
      on_expiry_(std::move(on_expiry)),
      last_word_(std::move(last_word)),
      ticker_(SignalTicker::Line::watchdog, std::clamp(timeout_s / 8, 1e-3, 0.1),
              [this] { tick(); }) {}

HangWatchdog::HangWatchdog(double timeout_s, Expiry on_expiry)
    : HangWatchdog(timeout_s, std::move(on_expiry), LastWord{}) {}

void HangWatchdog::say_last_word(const char* what) const {
  write_all(last_word_.prefix.data(), last_word_.prefix.size());
  if (what) write_all(what, std::strlen(what));
  write_all(last_word_.suffix.data(), last_word_.suffix.size());
  write_all("\n", 1);
  run_exit_restores();  // those the stuck expiry has not reached (each runs once)
  _exit(last_word_.exit_code);
}

void HangWatchdog::tick() {
  if (done_.load(std::memory_order_acquire)) return;
  const int64_t now = monotonic_ns();
  const int64_t firing = firing_since_ns_.load(std::memory_order_acquire);
  if (firing != 0) {  // this tick cut into the expiry handler, which has not ended the process
    if (last_word_.exit_code >= 0 && now - firing > kLastWordAfterNs)
      say_last_word(what_.load(std::memory_order_relaxed));
    return;
  }
  const uint64_t now_calls = calls_.load(std::memory_order_acquire);
  if (now_calls % 2 == 0) return;  // nothing in flight
  if (now_calls != seen_) {        // a new call since the last look: start its clock
    seen_ = now_calls;
    since_ns_ = now;
    return;
  }
  if (static_cast<double>(now - since_ns_) * 1e-9 < timeout_s_) return;
  // The call armed with `what` has been in flight for longer than the timeout.
  fired_.store(true, std::memory_order_release);
  firing_since_ns_.store(now, std::memory_order_release);
  on_expiry_(what_.load(std::memory_order_relaxed));
  done_.store(true, std::memory_order_release);
}

}  // namespace tpb
