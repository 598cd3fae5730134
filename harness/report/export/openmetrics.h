// The Prometheus text exposition format (version 0.0.4, which OpenMetrics parsers also take for
// gauges and summaries) of an export table: for node_exporter's textfile collector or a push
// gateway. Formatting only.
#pragma once
#include <string>
#include <vector>

#include "harness/report/export/export_table.h"

namespace tpb {

// Each family that has samples: its # HELP and # TYPE lines, then one line per sample, labelled
// by the point (and rank and host for per-rank families). Ends with "# EOF".
std::string openmetrics_text(const std::vector<ExportPoint>& points);

// A sample value as the format writes it: shortest round-trip decimal, +Inf / -Inf.
std::string metric_number(double v);

}  // namespace tpb
