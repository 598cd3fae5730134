// The analysis of a point's timelines into its record: the same code for ranks that measured
// (point_runner.cc, after the gather) and for virtual ranks (model/model_point.cc).
#pragma once
#include <vector>

#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/record/point_builder.h"
#include "layers/device.h"

namespace tpb {

// The point's record and, when the spec names a trace, its trace document. `traces` and
// `samples` are indexed by world rank.
PointOutcome analyze_point(const RunSpec& spec, int64_t layers, const Peaks& peaks,
                           const DeviceCaps& caps, std::vector<RankTrace> traces,
                           const std::vector<RankSample>& samples);

}  // namespace tpb
