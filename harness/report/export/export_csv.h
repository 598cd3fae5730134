// An export table as CSV for spreadsheets: one row per rank of each point, the point's own
// figures repeated on each of its rows. Formatting only.
#pragma once
#include <string>
#include <vector>

#include "harness/report/export/export_table.h"

namespace tpb {

// Header: the points' labels (in first-seen order), rank and host, then one column per family,
// quantile and suffix that has a value somewhere ("mbu", "step_seconds_q0.95",
// "step_seconds_count"). Empty cells for figures a row does not have (null, or another kind).
// Fields are quoted as RFC 4180 says when they hold a comma, a quote or a line break.
std::string csv_text(const std::vector<ExportPoint>& points);

}  // namespace tpb
