// Compact console report of a point record: one row per rank, an aggregate row, the
// straggler marked. Formatting only; every number comes from the record.
#pragma once
#include <string>

#include "harness/record/point_record.h"

namespace tpb {

std::string format_point_table(const PointRecord& point);

}  // namespace tpb
