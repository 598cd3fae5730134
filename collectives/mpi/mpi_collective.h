// MPI implementation of Collective for host-memory devices (the CPU backend). Each call waits
// as MpiWait says (collectives/mpi/mpi_wait.h): blocking with a watchdog beside it by default,
// or nonblocking and polled; either way a missing peer ends in a hang report after the
// configured seconds instead of a hang.
#pragma once
#include <mpi.h>

#include <memory>

#include "collectives/collective.h"
#include "collectives/mpi/mpi_wait.h"

namespace tpb {

MPI_Datatype mpi_type(DType t);

// `comm` is the TP group's communicator; the collective does not own it.
std::unique_ptr<Collective> make_mpi_collective(MPI_Comm comm, const MpiWait& wait);

}  // namespace tpb
