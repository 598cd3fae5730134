// A watchdog beside blocking collective calls. A rank blocked in MPI_Allreduce cannot poll a
// clock or be cancelled, so the deadline is kept from a periodic tick (signal_ticker.h: a timer
// signal on the calling thread, no thread of its own, so MPI can run at MPI_THREAD_SINGLE): the
// caller arms it with the call's name as the call starts and disarms it when the call returns,
// and the tick, a few times per second, hands the name to its expiry handler once one call has
// been in flight longer than the timeout.
// Arming and disarming are a plain store each, with no lock, no system call and no clock read
// (a clock read costs ~50 ns here, over 1% of a 4 KB all-reduce): the tick times a call from
// its own first sight of it, so a call is reported between timeout and timeout + two tick
// periods (0.2 s at most) after it began.
// The expiry handler runs inside the signal handler, on the thread blocked in the call. It may
// format and print (the blocked call holds no lock of the C library's), but in case it ever
// blocks, a LastWord given at construction is written with write(2) and the process _exits
// with its code once the handler has run for two seconds without ending the process.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "collectives/signal_ticker.h"

namespace tpb {

class HangWatchdog {
 public:
  // Runs in the tick's signal handler, at most once, with the name given to arm(). tpbench's
  // handler ends the process (collectives/mpi/mpi_wait.cc); if it returns, the watchdog stops
  // watching.
  using Expiry = std::function<void(const char* what)>;
  // The line of last resort: prefix, the call's name, suffix and a newline, then _exit(code).
  // An empty one (code < 0) is never used.
  struct LastWord {
    std::string prefix, suffix;
    int exit_code = -1;
  };

  // timeout_s > 0. Made, armed, disarmed and destroyed on one thread: the one that makes the
  // calls.
  HangWatchdog(double timeout_s, Expiry on_expiry, LastWord last_word);
  HangWatchdog(double timeout_s, Expiry on_expiry);  // no last word
  ~HangWatchdog() = default;
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

  // `what` must outlive the call: a string literal. Only the calling thread arms and disarms
  // (and the tick runs on it), so the counter is advanced by a load and a store, not a locked
  // read-modify-write.
  void arm(const char* what) {
    what_.store(what, std::memory_order_relaxed);
    calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  void disarm() {
    calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  double timeout_s() const { return timeout_s_; }
  bool fired() const { return fired_.load(std::memory_order_acquire); }

 private:
  void tick();
  [[noreturn]] void say_last_word(const char* what) const;

  const double timeout_s_;
  const Expiry on_expiry_;
  const LastWord last_word_;
  // Even: nothing in flight; odd: call number (calls_ + 1) / 2 is in flight.
  std::atomic<uint64_t> calls_{0};
  std::atomic<const char*> what_{nullptr};
  std::atomic<bool> fired_{false};
  // The tick's own: it runs on one thread, one at a time, except when it cuts into its own
  // stuck expiry, which reads only `firing_since_ns_`.
  uint64_t seen_ = 0;                        // the counter at the last tick
  int64_t since_ns_ = 0;                     // when the call in flight was first seen
  std::atomic<int64_t> firing_since_ns_{0};  // the expiry's start; 0 before it
  std::atomic<bool> done_{false};            // the expiry returned: watch no more
  SignalTicker ticker_;                      // last: it ticks once every member above exists
};

// Arms `dog` (when not null) for the scope of one call; an exception from the call disarms it.
class WatchedCall {
 public:
  WatchedCall(HangWatchdog* dog, const char* what) : dog_(dog) {
    if (dog_) dog_->arm(what);
  }
  ~WatchedCall() {
    if (dog_) dog_->disarm();
  }
  WatchedCall(const WatchedCall&) = delete;
  WatchedCall& operator=(const WatchedCall&) = delete;

 private:
  HangWatchdog* dog_;
};

}  // namespace tpb
