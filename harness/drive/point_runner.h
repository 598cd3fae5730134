// Runs one benchmark point on every rank: memory check, TP model, optional verification,
// warm-up and measured steps with injection, clock sync, gather, and (rank 0) analysis.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "layers/device.h"

namespace tpb {

// Collective over the world. Returns the point's JSON on world rank 0 and null elsewhere.
// Expected per-point conditions (out of memory) come back as a point with status "oom".
nlohmann::ordered_json run_point(const RunSpec& spec, const World& w, Device& dev,
                                 const Peaks& peaks);

}  // namespace tpb
