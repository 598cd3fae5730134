// Hand-built timelines for the analysis tests: a segment given in milliseconds.
#pragma once
#include <cstdint>

#include "harness/analysis/analysis.h"

namespace tpb::test {

inline constexpr double kMs = 1e-3;

// Appends op's segment [t0_ms, t1_ms] of `step` (and `layer`) to rank trace t; launched_ms,
// where given, is when the op's launch call returned.
inline void add(RankTrace& t, int step, Op op, double t0_ms, double t1_ms, int layer = 0,
                double launched_ms = 0) {
  t.segs.push_back(SegmentRecord{t0_ms * kMs, t1_ms * kMs, step, static_cast<int16_t>(layer), op,
                                 static_cast<uint8_t>(op_is_collective(op) ? 1 : 0),
                                 launched_ms * kMs});
}

}  // namespace tpb::test
