// A periodic tick on the thread that made it, from a POSIX timer's realtime signal. The hang
// watchdog and the host beacon run on ticks instead of on threads of their own, so a rank that
// starts no helper thread can initialise MPI at MPI_THREAD_SINGLE: Open MPI turns its internal
// locking on at any level above SINGLE, which costs a 4 KB all-reduce on 2 ranks of one host
// about 0.5 us of 3 (tests/bench/allreduce_side_by_side.sh).
// The tick runs in a signal handler, on the making thread, wherever that thread is (inside
// MPI_Allreduce, in a GEMM, in a write): what it does routinely must be async-signal-safe
// (atomics, clock_gettime, sendto, recv). The action is installed with SA_RESTART, so reads and
// writes it interrupts resume; libstdc++'s sleep_for resumes; poll and epoll_wait return EINTR,
// which Open MPI's event loop retries. A tick costs the thread a few microseconds, ten times
// a second at most.
#pragma once
#include <sys/types.h>

#include <csignal>
#include <ctime>
#include <functional>

namespace tpb {

class SignalTicker {
 public:
  // One realtime signal per line, so the two never queue behind each other. The watchdog's is
  // re-entrant (SA_NODEFER): its next tick can still act while its expiry handler is stuck.
  enum class Line { watchdog, beacon };
  using Tick = std::function<void()>;

  // period_s > 0. Throws Error when the line's signal already has a handler of someone else's.
  SignalTicker(Line line, double period_s, Tick tick);
  // On the making thread (asserted): stops the timer and drops a tick still pending, so no
  // tick reaches a destroyed owner.
  ~SignalTicker();
  SignalTicker(const SignalTicker&) = delete;
  SignalTicker& operator=(const SignalTicker&) = delete;

  // Holds back the line's ticks on the calling thread for a scope: for a reader on the making
  // thread of state its tick writes.
  class Hold {
   public:
    explicit Hold(Line line);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    sigset_t old_;
  };

  static int signal_of(Line line);

 private:
  static void on_signal(int signo, siginfo_t* info, void* ctx);

  const int signo_;
  const Tick tick_;
  pid_t tid_ = 0;
  timer_t timer_{};
};

}  // namespace tpb
