// Runs one benchmark point on every rank: memory plan, TP model, optional verification,
// warm-up and measured steps with injection, clock sync, gather, and (rank 0) analysis.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "collectives/mpi/mpi_wait.h"
#include "collectives/progress_board.h"
#include "harness/analysis/peaks.h"
#include "harness/config/inject_spec.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/clock_sync.h"
#include "harness/mpi/world.h"
#include "harness/record/point_builder.h"
#include "harness/record/point_record.h"
#include "layers/device.h"

namespace tpb {

// What a rank knows of itself, whatever it ran: who and where it is, its --inject, its memory
// need and budget, its clock against rank 0's.
RankRecord rank_identity(const World& w, const Device& dev, const TpGroup& group,
                         const InjectSpec& inj, const MemoryRecord& memory,
                         const ClockModel& clock);

// A rank's --check figures into its sample, the same for run and serve; `verifier`: this rank
// compared. JSON has no infinity: a non-finite error (a NaN in the output) is kept as 1e300,
// which still fails the check.
void set_check(RankSample& s, bool verifier, double max_abs_err, double tolerance, bool passed);

// --inject mem_reserve: allocates and touches `gib` GiB for the whole point (nothing at <= 0).
DeviceBuffer reserve_capacity(Device& dev, double gib);

// Collective over the world. Returns the point's record (and its trace, when the spec names
// one) on world rank 0 and nothing elsewhere; writes no files. Expected per-point conditions
// (out of memory) come back as a record with status oom.
std::optional<PointOutcome> run_point(const RunSpec& spec, const World& w, Device& dev,
                                      const Peaks& peaks);

}  // namespace tpb
