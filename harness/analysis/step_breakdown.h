// Per step and per rank: compute, the Scalasca wait and transfer of the step's collectives,
// and the step's own bounds. A serving run's steps differ from one another, so its step log
// and its late-token attribution need each step's split, not only the point's totals.
#pragma once
#include <map>
#include <tuple>
#include <vector>

#include "harness/analysis/analysis.h"

namespace tpb {

struct RankStepSplit {
  double t0 = 0, t1 = 0;  // the rank's Op::step bounds (common clock); 0, 0 when absent
  double compute_s = 0, wait_s = 0, transfer_s = 0;
  // The rank's own time inside its step bounds outside its ops and collectives (launches,
  // sampling, idle at kernel boundaries, --inject host_delay): the bounds less the other three.
  double host_s = 0;
};

struct StepSplit {
  int step = 0;
  std::vector<RankStepSplit> ranks;                // in the order of the traces given
  double device_time_s = 0;                        // max over ranks of the step's bounds
  double max_compute_s = 0, median_compute_s = 0;  // median: mean of the two middle values
  // The lower median (the straggler's reference in results, point_builder's StragglerRecord):
  // with 2 ranks the faster one, so max - it is all the time the others spent waiting.
  double lower_median_compute_s = 0;
  // The same over each rank's busy time, compute_s + host_s: what its peers wait for at the
  // step's collectives whether the late rank computes longer or does host work in the step.
  double max_busy_s = 0, lower_median_busy_s = 0;
};

// A collective instance, matched across ranks: (step, layer, op).
using CollectiveInstance = std::tuple<int, int, int>;
// The latest enter of every measured collective instance over `ranks` (one TP group): what a
// collective's wait and transfer are split against (analysis.h), and whatif's replay too.
std::map<CollectiveInstance, double> latest_enters(const std::vector<RankTrace>& ranks);

// Measured steps (step >= 0) in increasing order. Collective instances are matched across
// ranks by (step, layer, op); the traces must belong to one TP group.
std::vector<StepSplit> step_breakdown(const std::vector<RankTrace>& ranks);

}  // namespace tpb
