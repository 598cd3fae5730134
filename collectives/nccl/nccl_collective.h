// NCCL all-reduce on the CUDA device's stream, with a watchdog: a collective that does not
// complete within the timeout aborts the communicator and throws CollectiveTimeout.
#pragma once
#include <mpi.h>

#include <memory>

#include "collectives/collective.h"
#include "layers/device.h"

namespace tpb {

// `dev` must be a CudaDevice (BadInput otherwise); `tp_comm` is the TP group. Collective:
// every rank of tp_comm calls this (the NCCL id travels by MPI_Bcast from group rank 0).
std::unique_ptr<Collective> make_nccl_collective(MPI_Comm tp_comm, Device& dev, double timeout_s);

}  // namespace tpb
