// Picks the Collective for a point by name and the device's memory (run-time choice, never
// build-time); the table is in registry.cc.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "collectives/collective.h"
#include "collectives/mpi/mpi_wait.h"
#include "harness/config/run_spec.h"
#include "layers/device.h"

namespace tpb {

// Throws BadInput when the combination is not built in or not supported. `report` completes the
// hang report of a blocked MPI call (--mpi-mode blocking); empty: the timeout message alone.
std::unique_ptr<Collective> make_collective(const RunSpec& spec, MPI_Comm tp_comm, Device& dev,
                                            HangReport report = {});

// Names of the collectives compiled into this binary, in the registry's order: nccl only
// where NCCL itself is linked, not its stand-in.
std::vector<std::string> built_collectives();

// The version of the NCCL this binary links ("2.27.7"); "" when none (no CUDA, or the stand-in).
std::string linked_nccl_version();

}  // namespace tpb
