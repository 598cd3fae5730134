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
// (1.25.0) "$0.778 per million output tokens, $0.389 per million tokens (8 GPUs at $3.5/h,
// --price)"; a null figure says why.
std::string cost_text(const CostPerMtok& c);
// report.md's serving curve: the summary line above and, with a price, each load's cost per
// million tokens; "" without a curve.
std::string serve_curve_md(const std::optional<CurveRecord>& c);
// report.md's table of a serve point's longest inter-token gaps (itl_attribution.worst), each
// with the part that made it; "" where the point has none.
std::string late_tokens_md(const PointRecord& p);

}  // namespace tpb
