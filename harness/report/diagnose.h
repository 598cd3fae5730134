// `tpbench diagnose`: the article's debugging order applied to a results file. Pure function
// from point records to verdicts; the verb only formats them.
#pragma once
#include <string>
#include <vector>

#include "harness/record/point_record.h"
#include "harness/record/verdict.h"

namespace tpb {

// Verdicts for one ok point (none for other statuses).
std::vector<Verdict> diagnose_point(const PointRecord& point);
// Sweep-level findings (memory exhaustion, the throughput/latency knee).
std::vector<Verdict> diagnose_sweep(const std::vector<PointRecord>& points);

// One line per verdict; `line` takes order, level, topic and text, in that order.
std::string format_verdicts(const std::vector<Verdict>& v,
                            const char* line = "  [{}] {:<8} {:<11} {}\n");

}  // namespace tpb
