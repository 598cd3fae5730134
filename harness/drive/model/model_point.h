// One point on virtual ranks (--backend model): the memory plan against the hardware profile's
// memory, the virtual ranks' timelines, then the same analysis and record as measured ranks.
#pragma once
#include "collectives/model/fabric.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/record/point_record.h"
#include "layers/device.h"

namespace tpb {

// What the results' context and every point say the "device" is.
DeviceCaps model_device_caps(const RunSpec& spec, const Fabric& fabric);

// The profile's stated peaks (a profile that probes at start-up has none: BadInput).
Peaks model_peaks(const RunSpec& spec);

PointOutcome run_model_point(const RunSpec& spec, const Peaks& peaks, const Fabric& fabric);

}  // namespace tpb
