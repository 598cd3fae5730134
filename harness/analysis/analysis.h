// Analysis: pure functions from per-rank timelines (already on the common clock) and the
// cost model to the metrics of docs/ARCHITECTURE.md "Metric definitions". No MPI, no I/O.
#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "harness/analysis/stats.h"
#include "layers/timeline.h"

namespace tpb {

struct RankTrace {
  int rank = 0;        // world rank
  int group = 0;       // TP group index
  int group_rank = 0;  // rank inside the TP group
  // Common clock; warm-up steps have step < 0. Op::step records bound each step; all-reduce
  // records are collectives; every other op is compute.
  std::vector<SegmentRecord> segs;
  // How far this rank's stamps may sit from the common clock: its offset's (ping-pong, half
  // the round trip) plus its device stamps' conversion to its host clock (0 for host stamps).
  double clock_uncertainty_s = 0;
};

// Scalasca's split of one rank's time in one collective instance (ARCHITECTURE's metric
// definitions): `enter`/`exit` are the rank's, `latest` the last enter of any participant.
inline double wait_at_collective(double enter, double exit, double latest) {
  return std::max(0.0, std::min(latest, exit) - enter);
}
inline double transfer_at_collective(double enter, double exit, double latest) {
  return std::max(0.0, exit - std::max(enter, latest));
}

// Which step time MBU, MFU and roofline_fraction divide by. A fixed-batch point repeats one
// step shape, so its typical step (p50) is the honest one. A serving point's steps each have
// their own shape and its cost is the mean over them: its figures must be totals over totals
// (mean cost / mean step time), or a few long prefill steps' work lands on the short median
// decode step and the point beats its peaks while no step does.
enum class StepTimeBasis { p50, mean };

struct AnalysisInput {
  std::vector<RankTrace> ranks;
  StepTimeBasis basis = StepTimeBasis::p50;
  double step_flops = 0;       // per rank per step (cost model)
  double step_bytes = 0;       // per rank per step (cost model)
  double tokens_per_step = 0;  // per TP group per step
  double peak_flops = 0;       // per device
  double peak_bw = 0;          // per device
  double occupancy_window_s = 1.0 / 6.0;
  double clock_uncertainty_s = 0;  // from clock sync; for the clock-condition check
};

struct RankMetrics {
  int rank = 0, group = 0, group_rank = 0;
  double wall_s = 0;      // first measured step start .. last measured step end
  double compute_s = 0;   // sum of compute segments (incl. injected work)
  double wait_s = 0;      // sum of Scalasca Wait at NxN
  double transfer_s = 0;  // sum of NxN completion (the collective's own time)
  double collective_s = 0;
  double busy_fraction = 0, useful_fraction = 0, host_gap_fraction = 0, occupancy_sampled = 0;
  // host_gap_fraction split by where the idle falls: inside the measured steps (between the
  // step's ops: launches, kernel boundaries, host work between ops) or outside every step
  // (host work between steps: scheduling, sampling, synchronisation). Fractions of wall_s.
  double idle_in_steps_fraction = 0, idle_between_steps_fraction = 0;
  // Of the idle inside the steps, the gaps before ops that carry their launch (a recorded
  // launch call, SegmentRecord::launched), split at the time that call returned: before it
  // the device waited for the host (launch time, which a CUDA graph removes), after it the
  // work was queued and the device sat at a kernel boundary. Fractions of wall_s; the rest of
  // the inside idle (before stamped collectives, at step ends) is in neither.
  double idle_launch_fraction = 0, idle_boundary_fraction = 0;
  int launch_records = 0;  // measured segments that carry their launch
  double step_time_p50_s = 0, step_time_mean_s = 0;
  double mbu = 0, mfu = 0, mbu_compute = 0, mfu_compute = 0;
  int arrived_last = 0;
  // The wait the others spent in the instances this rank entered last: what its late arrivals
  // cost its group (Scalasca's wait at N x N, charged to the latest rank).
  double caused_wait_s = 0;
  int collectives = 0;
  int clock_condition_violations = 0;
  int measured_steps = 0;
  // Seconds per op over the measured steps (the HTA-style kernel breakdown).
  std::array<double, static_cast<std::size_t>(Op::count)> op_s{};
};

struct Straggler {
  int rank = -1;
  double arrived_last_share = 0;
  double excess_compute_fraction = 0;
  double caused_wait_share = 0;  // its caused_wait_s / its group's wait
  // The rank whose late arrivals cost its group the largest share of the group's wait: the
  // straggler itself unless that rank arrives last often but by little.
  int costliest_rank = -1;
  double costliest_share = 0;
  // Arrival order is known only where the last enter leads the one before it by more than the
  // two ranks' clock uncertainties (skew_uncertainty_s): only those instances count towards
  // arrived_last and caused_wait. lead_s is the median such lead of the named rank. With
  // multi-rank instances but none resolved, no rank is named (rank -1, within_uncertainty).
  double lead_s = 0;
  bool within_uncertainty = false;
  // Then the rank with the most compute, for straggler_cause to say whether any rank has
  // excess time at all (a lead too small to resolve is not a cause to look for).
  int busiest_rank = -1;
};

struct CollectiveSummary {
  int count = 0;               // collective instances (summed over TP groups)
  std::vector<double> skew_s;  // one per instance
  Summary skew;
  double wait_fraction = 0;     // sum wait / sum wall over ranks
  double transfer_s_total = 0;  // sum over ranks
  double wait_s_total = 0;
  // The largest pair uncertainty of any TP group: the sum of its two least certain ranks'
  // clock_uncertainty_s. A skew below it may be clock error alone.
  double skew_uncertainty_s = 0;
  int unresolved_arrivals = 0;  // multi-rank instances whose last two enters lie within it
};

struct PointAnalysis {
  std::vector<RankMetrics> ranks;
  std::vector<double> step_time_s;  // per measured step: max over the group's ranks (all groups)
  Summary step_time;
  double tokens_per_s = 0;      // all groups' tokens / mean step time
  double flops = 0, bytes = 0;  // per rank per step
  double mbu = 0, mfu = 0, mbu_compute = 0, mfu_compute = 0;
  double intensity = 0, ridge = 0, mfu_ceiling = 0, roofline_fraction = 0;
  double busy_fraction = 0, useful_fraction = 0, occupancy_sampled = 0, host_gap_fraction = 0;
  double idle_in_steps_fraction = 0, idle_between_steps_fraction = 0;  // means over ranks
  double idle_launch_fraction = 0, idle_boundary_fraction = 0;         // means over ranks
  int launch_records = 0;                                              // summed over ranks
  CollectiveSummary collectives;
  Straggler straggler;
  int clock_condition_violations = 0;
};

PointAnalysis analyze(const AnalysisInput& in);

// Measure of the union of intervals (sorted or not), clipped to [lo, hi].
double union_length(std::vector<std::pair<double, double>> iv, double lo, double hi);

}  // namespace tpb
