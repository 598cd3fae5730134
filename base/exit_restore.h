// What must be undone however the process ends (a GPU clock lock): the watchdog's _Exit, a
// scheduler's SIGTERM/SIGINT, a peer's MPI_Abort (mpirun's SIGTERM to this rank) and a crash all
// skip destructors, so an owner registers its restore here and every one of those paths runs it.
#pragma once
#include <csignal>

namespace tpb {

// A restore must be noexcept and may run inside a signal handler: it should make the one library
// call that undoes the change and nothing else (no allocation, no locks of its own).
using RestoreFn = void (*)(void* ctx) noexcept;

// One registered restore for its lifetime; each runs at most once, on whichever path comes
// first: run_now() (the owner's normal or exceptional exit) or run_exit_restores().
// Registering the first one installs the signal handler: SIGTERM, SIGINT, SIGHUP, SIGQUIT (a
// scheduler or mpirun ending the job), SIGABRT (std::terminate), SIGSEGV, SIGBUS, SIGFPE (a
// crash); a signal set to SIG_IGN is left alone. SIGKILL cannot be caught: Slurm and mpirun send
// SIGTERM first and SIGKILL only after a grace period (Slurm's KillWait, 30 s by default).
class ExitRestore {
 public:
  ExitRestore(RestoreFn fn, void* ctx);  // throws Error when all slots are taken
  ~ExitRestore();                        // forgets the restore without running it
  ExitRestore(const ExitRestore&) = delete;
  ExitRestore& operator=(const ExitRestore&) = delete;

  // Runs it now unless some path already did; true when this call ran it.
  bool run_now() noexcept;

 private:
  int slot_;
};

// Runs every registered restore that has not run yet. The hang watchdog calls it before _Exit and
// the signal handler before the signal's prior disposition acts.
void run_exit_restores() noexcept;

// Blocks the termination signals in the calling thread, so a helper thread that calls the same
// library as a restore (the NVML sampler) never takes the signal while holding that library's
// lock: the signal then lands on a thread that can make the call.
void block_exit_signals_in_this_thread() noexcept;

}  // namespace tpb
