// Polled waits with a deadline, shared by the device-side collectives: a hung peer must turn
// into CollectiveTimeout (and an abort), never into a rank blocked forever in MPI_Wait.
#pragma once
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "harness/errors.h"

namespace tpb {

inline std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

// Polls `req` until it completes or `timeout_s` passes; then throws CollectiveTimeout
// "<what> did not complete in S s". The request is left pending on timeout: the caller aborts.
inline void wait_request(MPI_Request& req, double timeout_s, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      throw BackendError(what + ": MPI_Test failed");
    if (done) return;
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
    if (timeout_s > 0 && waited.count() > timeout_s)
      throw CollectiveTimeout(what + " did not complete in " + seconds_text(timeout_s) + " s");
    std::this_thread::yield();
  }
}

// A barrier that can time out: MPI_Ibarrier polled by wait_request.
inline void timed_barrier(MPI_Comm comm, double timeout_s, const std::string& what) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS) throw BackendError(what + ": MPI_Ibarrier failed");
  wait_request(req, timeout_s, what);
}

}  // namespace tpb
