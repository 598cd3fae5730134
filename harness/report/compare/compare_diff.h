// Where two matched run points' step times differ (tpbench compare): the per-step difference
// split into compute, transfer, wait and time outside the ops, and the slower point's extra
// time classified op by op as straggler_cause classifies a late rank, the faster point standing
// in for its group. The trace-diff of HTA, on tpbench's own records.
#pragma once
#include <optional>
#include <string>

#include "harness/record/compare_record.h"
#include "harness/record/point_record.h"

namespace tpb {

// nullopt for points that are not ok, serve points (their steps differ in shape), and points
// without per-rank records or measured steps.
std::optional<CompareDiff> compare_diff(const PointRecord& base, const std::string& base_run,
                                        const PointRecord& p, const std::string& run);

}  // namespace tpb
