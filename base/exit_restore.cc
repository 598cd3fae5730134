// The restore registry and its signal handler. The house has no globals, but a signal handler can
// reach nothing else: the slots and the prior signal actions below are the one exception.
//
// The compromise on async-signal safety: POSIX lists no NVML call as async-signal-safe, and a
// restore must still make one, because nothing else puts the GPU's clocks back. What is done to
// keep that safe enough:
//  - the registry itself is lock-free and never allocates (fixed slots, one atomic per slot, a
//    compare-exchange claims a restore so it runs once even when a signal cuts into another path);
//  - helper threads that call NVML block the termination signals
//    (block_exit_signals_in_this_thread), so a process-directed SIGTERM lands on a thread that
//    does not hold NVML's lock;
//  - a restore that blocks anyway (a signal on the main thread inside NVML) is cut off by
//    alarm(kRestoreBudgetS): SIGALRM's default action ends the process instead of hanging it.
#include "base/exit_restore.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "base/errors.h"

namespace tpb {
namespace {

constexpr int kSlots = 16;
constexpr unsigned kRestoreBudgetS = 5;
enum SlotState : int { kFree = 0, kFilling = 1, kArmed = 2, kDone = 3 };

struct Slot {
  std::atomic<int> state{kFree};
  RestoreFn fn = nullptr;
  void* ctx = nullptr;
};

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS, SIGFPE};
constexpr int kSignalCount = sizeof(kSignals) / sizeof(kSignals[0]);

// Static storage, zero-initialised before any code runs: the handler may read it at any time.
Slot g_slots[kSlots];
struct sigaction g_prior[kSignalCount];
std::mutex g_install;  // two locks taken at once install once; never taken in the handler

bool run_slot(Slot& s) noexcept {
  int armed = kArmed;
  if (!s.state.compare_exchange_strong(armed, kDone, std::memory_order_acq_rel)) return false;
  s.fn(s.ctx);
  return true;
}

int signal_index(int sig) {
  for (int i = 0; i < kSignalCount; ++i)
    if (kSignals[i] == sig) return i;
  return -1;
}

// Runs the restores, then hands the signal to what was there before: the prior handler (Open MPI
// installs some for crash backtraces) or the default action, so the exit status still says which
// signal ended the process.
void on_exit_signal(int sig, siginfo_t* info, void* uctx) {
  struct sigaction alarm_default {};
  alarm_default.sa_handler = SIG_DFL;
  sigaction(SIGALRM, &alarm_default, nullptr);
  alarm(kRestoreBudgetS);
  run_exit_restores();
  alarm(0);
  const int i = signal_index(sig);
  if (i < 0) return;
  const struct sigaction& prior = g_prior[i];
  sigaction(sig, &prior, nullptr);
  if (prior.sa_flags & SA_SIGINFO) {
    if (prior.sa_sigaction) prior.sa_sigaction(sig, info, uctx);
  } else if (prior.sa_handler != SIG_DFL && prior.sa_handler != SIG_IGN) {
    prior.sa_handler(sig);
  } else {
    raise(sig);  // pending until this handler returns (the signal is blocked inside it)
  }
}

// Checked at every registration, not once per process: a signal ignored at the first one
// (SIGINT of a background job) may have its default back by the next (a forked child's).
void install_handlers() {
  const std::lock_guard<std::mutex> hold(g_install);
  for (int i = 0; i < kSignalCount; ++i) {
    struct sigaction now {};
    if (sigaction(kSignals[i], nullptr, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == &on_exit_signal) continue;  // ours
    const bool ignored = !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN;
    if (ignored) continue;  // e.g. SIGINT of a background job: it ends nothing
    g_prior[i] = now;
    struct sigaction act {};
    act.sa_sigaction = &on_exit_signal;
    act.sa_flags = SA_SIGINFO;
    sigemptyset(&act.sa_mask);
    for (int s : kSignals) sigaddset(&act.sa_mask, s);  // one restore pass, not nested ones
    sigaction(kSignals[i], &act, nullptr);
  }
}

}  // namespace

ExitRestore::ExitRestore(RestoreFn fn, void* ctx) : slot_(-1) {
  install_handlers();
  for (int i = 0; i < kSlots && slot_ < 0; ++i) {
    int free = kFree;
    if (!g_slots[i].state.compare_exchange_strong(free, kFilling)) continue;
    g_slots[i].fn = fn;
    g_slots[i].ctx = ctx;
    g_slots[i].state.store(kArmed, std::memory_order_release);
    slot_ = i;
  }
  if (slot_ < 0) throw Error(ExitCode::internal, "exit restore registry: all slots taken");
}

ExitRestore::~ExitRestore() {
  // An armed slot is dropped unrun (the owner restored, or never changed anything); a running one
  // belongs to the path that claimed it, which ends the process.
  g_slots[slot_].state.store(kFree, std::memory_order_release);
}

bool ExitRestore::run_now() noexcept {
  return run_slot(g_slots[slot_]);
}

void run_exit_restores() noexcept {
  for (Slot& s : g_slots) run_slot(s);
}

void block_exit_signals_in_this_thread() noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace tpb
