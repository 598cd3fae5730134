// Picks the Collective for a point by name and backend (run-time choice, never build-time).
#pragma once
#include <mpi.h>

#include <memory>

#include "collectives/collective.h"
#include "harness/config/run_spec.h"
#include "layers/device.h"

namespace tpb {

// Throws BadInput when the combination is not built in or not supported.
std::unique_ptr<Collective> make_collective(const RunSpec& spec, MPI_Comm tp_comm, Device& dev);

}  // namespace tpb
