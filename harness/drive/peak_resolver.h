// Resolves the peaks a point is judged against: the hardware profile's datasheet figures, or
// a start-up probe run on all ranks at once when the profile says measure_at_startup.
#pragma once
#include "harness/config/run_spec.h"
#include "harness/drive/point_runner.h"
#include "harness/mpi/world.h"
#include "layers/device.h"

namespace tpb {

// Collective over the world (the probe runs everywhere at the same time).
Peaks resolve_peaks(const RunSpec& spec, const World& w, Device& dev);

}  // namespace tpb
