// Each compute op's fraction of its roofline in one point: the one rule behind the op profile
// calibrate measures (op_profile.h) and the recorded runs `calibrate --from --runs` adds to it
// (recorded_runs.h), so a table's grid points and its added points are judged alike.
#pragma once
#include <vector>

#include "harness/analysis/peaks.h"
#include "harness/record/calibration_record.h"
#include "harness/record/point_record.h"

namespace tpb {

// roofline = max(FLOPs / peaks.flops, bytes / peaks.bw); fraction = roofline / time. An op's
// time is its mean scaled by the step's median over its mean, so the ops of a point add up to
// the median step the validation compares against (a descheduled step would otherwise lift
// every op of the point). The all-reduces have no FLOPs or bytes of their own and are left out.
std::vector<OpTimeRecord> op_fractions(const PointRecord& r, const Peaks& peaks);

}  // namespace tpb
