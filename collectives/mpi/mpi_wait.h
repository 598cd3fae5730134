// How tpbench's MPI collectives wait for a call. Blocking (the default) is the call
// applications make, MPI_Allreduce and its kin, with a HangWatchdog ticking beside it; the
// nonblocking mode is MPI_Iallreduce and its kin polled with MPI_Test against the deadline.
// They are different algorithms in Open MPI (tuned vs libnbc): on 2 ranks of one host, 3.9 vs
// 8.1 us at 4 KB and 181 vs 248 us at 1 MB, so the blocking call is what gets measured.
// Either way a call that outlives --collective-timeout is a hang, reported with the same
// message and exit code 3: the nonblocking wait throws CollectiveTimeout, the watchdog of a
// blocked call prints the report and ends the process itself (a blocked call cannot be undone).
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "collectives/hang_watchdog.h"
#include "collectives/mpi/mpi_mode.h"

namespace tpb {

// "%g" seconds for messages ("30", "0.5").
std::string seconds_text(double s);

// "<what> did not complete within <T> s": how a hang report starts, in both modes.
std::string timeout_message(const std::string& what, double timeout_s);

// The watchdog's end of a hung job: the report line on stderr, the exit restores
// (base/exit_restore.h), then _Exit with exit code 3. Makes no MPI call.
[[noreturn]] void end_hung_job(int world_rank, const std::string& report);

// Blocks until `req` completes or `timeout_s` passes (then throws CollectiveTimeout with
// timeout_message). timeout_s <= 0: no deadline.
void wait_or_timeout(MPI_Request& req, double timeout_s, const char* what, bool yield = false);

// The full report of a hung blocking call, from its timeout_message: the harness adds who
// never arrived, from the progress board. Runs on the watchdog's thread, so it makes no MPI
// calls; empty: the timeout message alone.
using HangReport = std::function<std::string(const std::string& timeout_message)>;

struct MpiWait {
  MpiMode mode = MpiMode::blocking;
  double timeout_s = 600;  // <= 0: no deadline
  bool yield = false;      // nonblocking: sched_yield between polls (oversubscribed hosts)
  HangReport report;       // blocking: the report printed before the process ends
};

// Issues one rank's collective calls in the configured mode.
class MpiCaller {
 public:
  // Reads the world rank (the report line names it) on the calling thread.
  explicit MpiCaller(MpiWait wait);
  MpiCaller(const MpiCaller&) = delete;  // the watchdog's handler holds `this`
  MpiCaller& operator=(const MpiCaller&) = delete;

  // `call(req)` issues the blocking MPI call when `req` is null and the nonblocking one into
  // *req otherwise (the shape of CollKindInfo::mpi). Nonblocking: throws CollectiveTimeout
  // after the timeout. Blocking: when the call is still in flight after the timeout, the
  // watchdog prints the report as main() prints an error and exits with code 3.
  template <class Call>
  void run(const char* what, Call&& call) {
    if (wait_.mode == MpiMode::blocking) {
      WatchedCall watched(dog_.get(), what);
      call(nullptr);
      return;
    }
    MPI_Request req = MPI_REQUEST_NULL;
    call(&req);
    wait_or_timeout(req, wait_.timeout_s, what, wait_.yield);
  }

  void barrier(MPI_Comm comm, const char* what);
  MpiMode mode() const { return wait_.mode; }

 private:
  MpiWait wait_;
  int world_rank_ = 0;
  std::unique_ptr<HangWatchdog> dog_;  // blocking mode with a deadline only
};

// A deadline for the MPI calls a point makes outside its collectives (the memory agreement,
// clock sync, the gathers): a peer that is gone (a dead host or link) blocks them as surely as
// a collective, and they end the same way: the report, then exit code 3.
class MpiWatch {
 public:
  explicit MpiWatch(double timeout_s);  // <= 0: no deadline
  MpiWatch(const MpiWatch&) = delete;   // the watchdog's handler holds `this`
  MpiWatch& operator=(const MpiWatch&) = delete;

  // What a hung call reports beyond its timeout message; set only while no call is watched
  // (arming publishes it to the watchdog's thread).
  void set_report(HangReport report) { report_ = std::move(report); }

  template <class F>
  decltype(auto) run(const char* what, F&& f) {
    WatchedCall watched(dog_.get(), what);
    return f();
  }

 private:
  double timeout_s_;
  int world_rank_ = 0;
  HangReport report_;
  std::unique_ptr<HangWatchdog> dog_;
};

}  // namespace tpb
