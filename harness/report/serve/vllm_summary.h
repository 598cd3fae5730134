// vLLM's `vllm bench serve` summary block for one serving point, from its record: the same
// labels, order and widths, latencies in ms, so a vLLM user's eyes and regexes find their
// figures. A printer only; every number is the record's.
#pragma once
#include <string>

#include "harness/record/point_record.h"

namespace tpb {

// Empty for a point without serving metrics (oom, error).
std::string format_vllm_summary(const PointRecord& p);

}  // namespace tpb
