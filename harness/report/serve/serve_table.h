// The console table of `tpbench serve`: one row per load, vLLM's figures, and the curve's
// free region, knee and memory wall under it; and report.md's table of the longest gaps.
#pragma once
#include <string>

#include "harness/record/curve_record.h"
#include "harness/record/point_record.h"

namespace tpb {

std::string format_serve_header(const std::string& axis);
std::string format_serve_row(const PointRecord& p);
std::string format_curve_summary(const CurveRecord& c);
// report.md's table of a serve point's longest inter-token gaps (itl_attribution.worst), each
// with the part that made it; "" where the point has none.
std::string late_tokens_md(const PointRecord& p);

}  // namespace tpb
