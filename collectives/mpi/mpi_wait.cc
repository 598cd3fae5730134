// The two waits: MPI_Test polling with a deadline, and the watchdog's end of a hung job.
#include "collectives/mpi/mpi_wait.h"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "base/errors.h"
#include "base/exit_restore.h"
#include "base/mpi_check.h"

namespace tpb {

// It runs in the watchdog's tick, a signal handler cutting into the blocked MPI call, where a
// second MPI call (MPI_Abort) is not allowed, so the process exits by itself: mpirun then ends
// the other ranks and returns this exit code. Nothing is lost: the results files are written and
// fsynced as each point finishes (harness/record/json/results_writer.h), and stdout is flushed
// here for the table rows already printed. _Exit skips every destructor, so what the point
// changed on the device (an --inject sm_clock lock) is put back first, after the report, which
// a stuck restore must not hold up.
void end_hung_job(int world_rank, const std::string& report) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", rank_error_line(world_rank, report).c_str());
  std::fflush(stderr);
  run_exit_restores();
  std::_Exit(static_cast<int>(ExitCode::collective_timeout));
}

namespace {

// Said if the report itself never finishes (hang_watchdog.h): the message without the board.
HangWatchdog::LastWord last_word(int world_rank, double timeout_s) {
  return {rank_error_line(world_rank, ""),
          " did not complete within " + seconds_text(timeout_s) +
              " s (where the other ranks were could not be told)",
          static_cast<int>(ExitCode::collective_timeout)};
}

}  // namespace

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

std::string timeout_message(const std::string& what, double timeout_s) {
  return what + " did not complete within " + seconds_text(timeout_s) + " s";
}

void wait_or_timeout(MPI_Request& req, double timeout_s, const char* what, bool yield) {
  // Poll instead of MPI_Wait: a hung peer must not hang us. Polling is also what NCCL's
  // kernels do while they wait, so a waiting rank stays busy in both backends.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int done = 0;
  for (unsigned spins = 0;; ++spins) {
    TPB_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    // Oversubscribed (more ranks than cores): a spinning waiter would steal the core the
    // late rank needs, inflating the very imbalance being measured. Yield instead.
    if (yield) sched_yield();
    if (timeout_s > 0 && (spins & 255u) == 0 && std::chrono::steady_clock::now() > deadline)
      throw CollectiveTimeout(timeout_message(what, timeout_s));
  }
}

MpiCaller::MpiCaller(MpiWait wait) : wait_(std::move(wait)) {
  TPB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
  if (wait_.mode != MpiMode::blocking || wait_.timeout_s <= 0) return;
  dog_ = std::make_unique<HangWatchdog>(
      wait_.timeout_s,
      [this](const char* what) {
        const std::string msg = timeout_message(what, wait_.timeout_s);
        end_hung_job(world_rank_, wait_.report ? wait_.report(msg) : msg);
      },
      last_word(world_rank_, wait_.timeout_s));
}

MpiWatch::MpiWatch(double timeout_s) : timeout_s_(timeout_s) {
  TPB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
  if (timeout_s_ <= 0) return;
  dog_ = std::make_unique<HangWatchdog>(
      timeout_s_,
      [this](const char* what) {
        const std::string msg = timeout_message(what, timeout_s_);
        end_hung_job(world_rank_, report_ ? report_(msg) : msg);
      },
      last_word(world_rank_, timeout_s_));
}

void MpiCaller::barrier(MPI_Comm comm, const char* what) {
  run(what, [comm](MPI_Request* req) {
    if (req)
      TPB_MPI_CHECK(MPI_Ibarrier(comm, req));
    else
      TPB_MPI_CHECK(MPI_Barrier(comm));
  });
}

}  // namespace tpb
