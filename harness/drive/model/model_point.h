// One point on virtual ranks (--backend model): the memory plan against the hardware profile's
// memory, the virtual ranks' timelines, then the same analysis and record as measured ranks.
#pragma once
#include <vector>

#include "collectives/model/fabric.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/record/point_builder.h"
#include "harness/record/point_record.h"
#include "layers/device.h"

namespace tpb {

// What the point is: a fixed batch (run, sweep) or a serving run, and whether its steps end
// with the LM head (serve's --lm-head is its own; run's is in the spec).
struct ModelUse {
  bool serving = false;
  bool lm_head = false;
};

// What the results' context and every point say the "device" is.
DeviceCaps model_device_caps(const RunSpec& spec, const Fabric& fabric, ModelUse use = {});

// The profile's stated peaks (a profile that probes at start-up has none: BadInput).
Peaks model_peaks(const RunSpec& spec);

// The bytes virtual rank `rank` may use: the budget or the profile's memory, less its
// --inject mem_reserve.
double virtual_rank_have(const RunSpec& spec, int rank);

// Rank `rank`'s record (identity, memory need and have, inject), as a measured rank fills it.
RankSample virtual_sample(const RunSpec& spec, const DeviceCaps& caps, int rank, double need);

// --inject clock_offset / clock_drift: each skewed rank's stamps onto its own clock, then a
// modelled sync back onto the common clock (and the rank's clock record), as the real sync.
// `traces` by world rank, `samples` indexed by world rank.
void apply_virtual_clocks(const RunSpec& spec, const Fabric& fabric, std::vector<RankTrace>& traces,
                          std::vector<RankSample>& samples);

PointOutcome run_model_point(const RunSpec& spec, const Peaks& peaks, const Fabric& fabric);

}  // namespace tpb
