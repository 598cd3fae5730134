#include "harness/measure/op_fractions.h"

#include <algorithm>

namespace tpb {

std::vector<OpTimeRecord> op_fractions(const PointRecord& r, const Peaks& peaks) {
  std::vector<OpTimeRecord> ops;
  if (!r.ops || !r.metrics) return ops;
  const double mean = r.metrics->step_time_s.mean, p50 = r.metrics->step_time_s.p50;
  const double to_median = mean > 0 && p50 > 0 ? p50 / mean : 1.0;
  for (const OpRecord& o : *r.ops) {
    if (!o.flops_per_step || !o.bytes_per_step || o.time_s_per_step <= 0) continue;
    const double roof = std::max(*o.flops_per_step / peaks.flops, *o.bytes_per_step / peaks.bw);
    const double t = o.time_s_per_step * to_median;
    if (roof <= 0) continue;
    ops.push_back({o.op, t, roof, roof / t});
  }
  return ops;
}

}  // namespace tpb
