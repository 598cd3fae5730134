// NCCL all-reduce on the CUDA device's stream, with a watchdog: a collective that does not
// complete within the timeout aborts the communicator and throws CollectiveTimeout.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "collectives/collective.h"
#include "layers/device.h"

namespace tpb {

// `dev` must be a CudaDevice (BadInput otherwise); `tp_comm` is the TP group. Collective:
// every rank of tp_comm calls this (the NCCL id travels by MPI_Bcast from group rank 0).
std::unique_ptr<Collective> make_nccl_collective(MPI_Comm tp_comm, Device& dev, double timeout_s);

// The linked NCCL's version ("2.27.7", from ncclGetVersion: no GPU needed), or "" in a build
// with the stand-in (configure found no NCCL), whose make_nccl_collective only refuses. What
// `info` lists and a run may choose follows this, not the build having CUDA.
std::string nccl_version();

}  // namespace tpb
