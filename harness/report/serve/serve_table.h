// The console table of `tpbench serve`: one row per load, vLLM's figures, and the curve's
// free region, knee and memory wall under it.
#pragma once
#include <string>

#include "harness/record/curve_record.h"
#include "harness/record/point_record.h"

namespace tpb {

std::string format_serve_header(const std::string& axis);
std::string format_serve_row(const PointRecord& p);
std::string format_curve_summary(const CurveRecord& c);

}  // namespace tpb
