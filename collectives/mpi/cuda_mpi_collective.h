// All-reduce of CUDA device buffers through MPI, staged in pinned host memory. Slower than
// NCCL but needs no NCCL and works with several ranks on one GPU, so the multi-rank functional
// tests can run the CUDA backend on a single-GPU machine.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <memory>

#include "collectives/collective.h"
#include "collectives/mpi/mpi_wait.h"
#include "layers/device.h"

namespace tpb {

// `dev` must be a CudaDevice. `max_bytes` > 0 sizes the staging buffer up front (no
// allocation in the timed loop); 0 sizes it on first use, i.e. in a warm-up step.
std::unique_ptr<Collective> make_cuda_mpi_collective(MPI_Comm tp_comm, Device& dev,
                                                     const MpiWait& wait,
                                                     std::size_t max_bytes = 0);

}  // namespace tpb
