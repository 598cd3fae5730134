// What one rank measured for one message size of `tpbench collectives`: plain data, gathered
// to rank 0, which builds the size's record from every rank's result.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/timeline.h"

namespace tpb {

// What one rank measured for one size; plain data, gathered to rank 0.
struct CollRankResult {
  // The stamped pass: one per iteration, on the synced clock (empty where not asked).
  std::vector<SegmentRecord> iters;
  double loop_s = 0;      // the timed pass: (stamp after - stamp before) / iters, own clock
  double baseline_s = 0;  // plain loop mean, own clock (0 when not asked)
  int64_t wrong = 0;
  double offset_s = 0, uncertainty_s = 0, drift_ppm = 0;
};

}  // namespace tpb
