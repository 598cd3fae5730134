// A watchdog thread beside blocking collective calls. A rank blocked in MPI_Allreduce cannot
// poll a clock or be cancelled, so the deadline is kept by a second thread: the caller arms it
// with the call's name as the call starts and disarms it when the call returns, and the thread,
// waking a few times per second, hands the name to its expiry handler once one call has been
// in flight longer than the timeout.
// Arming and disarming are an atomic store each, with no lock, no wake-up and no clock read
// (a clock read costs ~50 ns here, over 1% of a 4 KB all-reduce): the thread times a call from
// its own first sight of it, so a call is reported between timeout and timeout + two wake-up
// periods (0.2 s at most) after it began. The thread makes no MPI calls of its own (its handler
// must not either), so MPI_THREAD_FUNNELED is enough for it.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace tpb {

class HangWatchdog {
 public:
  // Runs on the watchdog's thread, at most once, with the name given to arm(). tpbench's
  // handler ends the process (collectives/mpi/mpi_wait.cc); if it returns, the watchdog stops
  // watching.
  using Expiry = std::function<void(const char* what)>;

  // timeout_s > 0.
  HangWatchdog(double timeout_s, Expiry on_expiry);
  ~HangWatchdog();
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

  // `what` must outlive the call: a string literal. Only the calling thread arms and disarms,
  // so the counter is advanced by a load and a store, not a locked read-modify-write.
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
  void watch();

  const double timeout_s_;
  const Expiry on_expiry_;
  // Even: nothing in flight; odd: call number (calls_ + 1) / 2 is in flight.
  std::atomic<uint64_t> calls_{0};
  std::atomic<const char*> what_{nullptr};
  std::atomic<bool> fired_{false};
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;   // guarded by m_
  std::thread thread_;  // last: it starts once every member above exists
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
