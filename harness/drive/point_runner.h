// Runs one benchmark point on every rank: memory plan, TP model, optional verification,
// warm-up and measured steps with injection, clock sync, gather, and (rank 0) analysis.
#pragma once
#include <optional>
#include <string>

#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "harness/record/point_record.h"
#include "layers/device.h"

namespace tpb {

// Collective over the world. Returns the point's record (and its trace, when the spec names
// one) on world rank 0 and nothing elsewhere; writes no files. Expected per-point conditions
// (out of memory) come back as a record with status oom.
std::optional<PointOutcome> run_point(const RunSpec& spec, const World& w, Device& dev,
                                      const Peaks& peaks);

}  // namespace tpb
