// MPI implementation of Collective for host-memory devices (the CPU backend).
// Every operation is nonblocking + polled, so a missing peer is a CollectiveTimeout after
// the configured seconds instead of a hang.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/collective.h"

namespace tpb {

// "%g" seconds for messages ("30", "0.5").
std::string seconds_text(double s);

// Blocks until `req` completes or `timeout_s` passes (then throws CollectiveTimeout with
// `what`). Shared by every MPI-based collective.
void wait_or_timeout(MPI_Request& req, double timeout_s, const char* what, bool yield = false);

MPI_Datatype mpi_type(DType t);

// `comm` is the TP group's communicator; the collective does not own it.
// yield_while_waiting: sched_yield between polls (for oversubscribed hosts only).
std::unique_ptr<Collective> make_mpi_collective(MPI_Comm comm, double timeout_s,
                                                bool yield_while_waiting = false);

}  // namespace tpb
