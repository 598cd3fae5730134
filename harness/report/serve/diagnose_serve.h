// diagnose on a serving point, in the article's order with its numbers: (1) regime, (2) the
// achieved batch against the queue (memory), (3) the ITL's shape (prefill spikes or uniformly
// slow), (4) host gap against device time, (5) TP balance, kernels last. Each verdict that names
// a cause carries a stable code (verdict.h).
#pragma once
#include <vector>

#include "harness/record/point_record.h"
#include "harness/record/verdict.h"

namespace tpb {

// Verdicts 2-4 and the balance code of an ok serve point (params.phase "serve"); diagnose_point
// adds the regime, balance and kernel verdicts every point gets.
std::vector<Verdict> serve_verdicts(const PointRecord& p);

}  // namespace tpb
