// `tpbench collectives`: one message size of a nccl-tests style sweep, measured on every rank
// in two passes (timed_pass.h): nccl-tests' timed loop for the mean, then a pass with
// per-iteration enter/exit stamps for per-iteration percentiles, arrival skew and Scalasca
// wait per rank.
//
// Definitions (documented in results/SCHEMA.md terms):
//  - time_s.mean: nccl-tests' figure: each rank's (stamp after the loop - stamp before it) /
//    iters on its own clock, then reduced over ranks as nccl-tests' -a says (default the mean;
//    time_s.over_ranks keeps rank 0's, the mean, the min and the max).
//  - iteration time t(i) (stamped pass) = max_r x(r,i) - min_r e(r,i) on the synced clock: from the
//  first
//    rank entering to the last rank leaving. p50/p99 are over iterations. Iterations run back
//    to back, so consecutive spans may overlap; their mean can exceed time_s.mean.
//  - algbw = S / time_s.mean, busbw = algbw * bus_factor(kind, n) (collectives/bus_bandwidth).
//  - skew, wait, transfer, arrived_last: harness/analysis/analysis.h over the iterations as
//  instances.
//  - wrong: elements that differ from the exact expected value after one verification call
//    on freshly filled buffers, summed over ranks.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/collective.h"
#include "harness/config/collectives_spec.h"
#include "harness/mpi/world.h"
#include "harness/record/collective_rank_result.h"
#include "layers/device.h"
#include "layers/timeline.h"

namespace tpb {

// The Collective the measurement goes through, made once for all sizes (an NCCL communicator
// is expensive), or null for the direct MPI path on host buffers. Collective over `w`.
std::unique_ptr<Collective> make_measured_collective(const CollectivesSpec& s, const World& w,
                                                     Device& dev);

// Collective over `w`: measures one size. `dev` holds the buffers; `coll` is
// make_measured_collective's result.
CollRankResult measure_collective(const CollectivesSpec& s, const CollCounts& c, const World& w,
                                  Device& dev, Collective* coll);

}  // namespace tpb
