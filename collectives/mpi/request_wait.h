// Polled waits with a deadline for the device-side collectives (CUDA + MPI, NCCL's barrier):
// a hung peer must turn into CollectiveTimeout (and an abort), never into a rank blocked
// forever in MPI_Wait. One implementation, wait_or_timeout in mpi_collective.cc, serves these
// and the CPU collective alike.
#pragma once
#include <mpi.h>

#include <string>

#include "collectives/mpi/mpi_collective.h"
#include "layers/base/errors.h"

namespace tpb {

// Device backends wait on a host thread that has nothing else to run, so they yield between
// polls (the GPU does the work; a spinning host thread only takes a core from a peer rank).
inline void wait_request(MPI_Request& req, double timeout_s, const std::string& what) {
  wait_or_timeout(req, timeout_s, what.c_str(), /*yield=*/true);
}

// A barrier that can time out: MPI_Ibarrier polled by wait_or_timeout.
inline void timed_barrier(MPI_Comm comm, double timeout_s, const std::string& what) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS) throw BackendError(what + ": MPI_Ibarrier failed");
  wait_request(req, timeout_s, what);
}

}  // namespace tpb
