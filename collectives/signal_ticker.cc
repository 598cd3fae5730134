// The ticker's timer, its signal action and the drain that makes destruction safe.
#include "collectives/signal_ticker.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/errors.h"

namespace tpb {

namespace {

pid_t this_thread_id() {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

sigset_t just(int signo) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, signo);
  return s;
}

}  // namespace

int SignalTicker::signal_of(Line line) {
  // Past glibc's own (SIGRTMIN already skips them) and the low few that libraries sometimes
  // take for themselves.
  return SIGRTMIN + (line == Line::watchdog ? 6 : 7);
}

void SignalTicker::on_signal(int, siginfo_t* info, void*) {
  // Only a timer's expiry carries a ticker; anything else sending this signal is ignored.
  if (info->si_code != SI_TIMER || info->si_value.sival_ptr == nullptr) return;
  const int saved = errno;
  static_cast<SignalTicker*>(info->si_value.sival_ptr)->tick_();
  errno = saved;
}

SignalTicker::SignalTicker(Line line, double period_s, Tick tick)
    : signo_(signal_of(line)), tick_(std::move(tick)), tid_(this_thread_id()) {
  TPB_ASSERT(period_s > 0, "a ticker needs a period above zero");
  const int signo = signo_;
  struct sigaction now {};
  TPB_ASSERT(sigaction(signo, nullptr, &now) == 0, "sigaction query");
  const bool ours = (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == &SignalTicker::on_signal;
  if (!ours && !(now.sa_flags & SA_SIGINFO) && now.sa_handler != SIG_DFL &&
      now.sa_handler != SIG_IGN)
    throw Error(ExitCode::internal, "signal SIGRTMIN+" + std::to_string(signo - SIGRTMIN) +
                                        " already has a handler; the hang watchdog needs it");
  struct sigaction act {};
  act.sa_sigaction = &SignalTicker::on_signal;
  act.sa_flags = SA_SIGINFO | SA_RESTART | (line == Line::watchdog ? SA_NODEFER : 0);
  // The beacon's tick is never cut by the watchdog's (whose report reads what the beacon
  // writes); the watchdog's may be cut only by its own next tick.
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, signal_of(Line::beacon));
  if (line == Line::beacon) sigaddset(&act.sa_mask, signal_of(Line::watchdog));
  TPB_ASSERT(sigaction(signo, &act, nullptr) == 0, "sigaction install");

  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = signo;
  ev.sigev_value.sival_ptr = this;
  ev._sigev_un._tid = tid_;  // glibc spells sigev_notify_thread_id only from 2.35
  if (timer_create(CLOCK_MONOTONIC, &ev, &timer_) != 0)
    throw Error(ExitCode::internal, std::string("timer_create: ") + std::strerror(errno));
  double whole = 0;
  const double frac = std::modf(period_s, &whole);
  itimerspec spec{};
  spec.it_interval = {static_cast<time_t>(whole), static_cast<long>(frac * 1e9)};
  spec.it_value = spec.it_interval;
  if (timer_settime(timer_, 0, &spec, nullptr) != 0) {
    const int err = errno;
    timer_delete(timer_);
    throw Error(ExitCode::internal, std::string("timer_settime: ") + std::strerror(err));
  }
}

SignalTicker::~SignalTicker() {
  if (this_thread_id() != tid_) {
    // A tick still pending on the making thread would reach freed memory: no way on from here.
    std::fprintf(stderr, "tpbench: internal error: a SignalTicker destroyed off its thread\n");
    std::abort();
  }
  const sigset_t mine = just(signo_);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &mine, &old);
  timer_delete(timer_);
  // A tick raised before the delete may still be pending: take it off the thread unhandled. (A
  // tick of another ticker on the same line may go with it: one late look, nothing lost.)
  const timespec zero{0, 0};
  while (sigtimedwait(&mine, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

SignalTicker::Hold::Hold(Line line) {
  const sigset_t s = just(signal_of(line));
  pthread_sigmask(SIG_BLOCK, &s, &old_);
}

SignalTicker::Hold::~Hold() {
  pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

}  // namespace tpb
