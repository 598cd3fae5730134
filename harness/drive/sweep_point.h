// One sweep point with the sweep's failure policy: expected conditions (unsupported dtype,
// out of memory) and failures every rank agrees on become a recorded point, and the sweep
// goes on; a failure that leaves ranks out of step (a hang, one rank dying) ends the job.
#pragma once
#include <mpi.h>

#include <optional>
#include <string>

#include "harness/config/run_spec.h"
#include "harness/drive/point_runner.h"
#include "harness/mpi/world.h"
#include "layers/device.h"

namespace tpb {

// Collective over the world. `outcome_comm` is a duplicate of the world communicator kept
// for the outcome vote, so the vote can never match a collective that a failed rank left
// half-done on the world communicator. Returns the outcome on world rank 0, none elsewhere.
std::optional<PointOutcome> run_sweep_point(const RunSpec& spec, const World& w, Device& dev,
                                            const Peaks& peaks, MPI_Comm outcome_comm);

// Empty when `dev` can run `spec`; otherwise why not (the caps decide, not the backend name).
std::string unsupported_reason(const RunSpec& spec, const Device& dev);

}  // namespace tpb
