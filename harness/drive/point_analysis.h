// The analysis of a point's timelines into its record: the same code for ranks that measured
// (point_runner.cc, after the gather) and for virtual ranks (model/model_point.cc).
#pragma once
#include <vector>

#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/record/point_builder.h"
#include "layers/cost_model.h"
#include "layers/device.h"

namespace tpb {

// The analysis' input for a point: its ranks' timelines, the cost of a step (its FLOPs, bytes
// and tokens) against `peaks`, and the largest clock uncertainty over the ranks' `samples`.
AnalysisInput analysis_input(std::vector<RankTrace> traces, const StepCost& cost,
                             const Peaks& peaks, double occupancy_window_s,
                             const std::vector<RankSample>& samples);

// The point's record and, when the spec names a trace, its trace document. `traces` and
// `samples` are indexed by world rank.
PointOutcome analyze_point(const RunSpec& spec, int64_t layers, const Peaks& peaks,
                           const DeviceCaps& caps, std::vector<RankTrace> traces,
                           const std::vector<RankSample>& samples);

}  // namespace tpb
