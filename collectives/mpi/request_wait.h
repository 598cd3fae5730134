// A barrier that can time out, for NCCL's communicator (it has its own deadline for its
// kernels and stays nonblocking): a hung peer must turn into CollectiveTimeout (and an
// abort), never into a rank blocked forever in MPI_Barrier.
#pragma once
#include <mpi.h>

#include <string>

#include "base/errors.h"
#include "collectives/mpi/mpi_wait.h"

namespace tpb {

// MPI_Ibarrier polled by wait_or_timeout. The device backend's host thread has nothing else to
// run, so it yields between polls (a spinning host thread only takes a core from a peer rank).
inline void timed_barrier(MPI_Comm comm, double timeout_s, const std::string& what) {
  MPI_Request req = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS) throw BackendError(what + ": MPI_Ibarrier failed");
  wait_or_timeout(req, timeout_s, what.c_str(), /*yield=*/true);
}

}  // namespace tpb
