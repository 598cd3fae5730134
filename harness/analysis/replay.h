// Counterfactual replay of a measured TP group (tpbench whatif). Each rank's measured steps
// become phases: host time, then compute, then the next collective; the replay runs them on a
// virtual clock where a collective exits at its latest enter plus the rank's own measured
// transfer (analysis.h's split), so waits are whatever skew the changed compute leaves.
// Replaying the phases unchanged gives back the measured step times (up to rounding).
// No MPI, no I/O.
#pragma once
#include <map>
#include <tuple>
#include <vector>

#include "harness/analysis/analysis.h"

namespace tpb {

// One op's time inside a phase, keyed so the same op can be found in every step.
using PhaseOpKey = std::tuple<int, int, int, int>;  // layer, op, occurrence in the phase, 0

struct ReplayPhase {
  double host_s = 0;      // time with no segment open, before and between this phase's ops
  double compute_s = 0;   // sum of the compute segments (injected work included)
  double transfer_s = 0;  // the collective ending the phase; the step's last phase has none
  std::map<PhaseOpKey, double> ops;  // compute seconds per op
};

struct ReplayStep {
  int step = 0;
  double lead_s = 0;                // from the rank's previous step end to this step's start
  std::vector<ReplayPhase> phases;  // one per collective, then the tail to the step's end
};

// One TP group: steps[r][k] is rank r's k-th measured step; every rank has the same steps and
// the same number of collectives in each.
struct ReplayGroup {
  std::vector<double> start_s;  // each rank's first step start (common clock)
  std::vector<std::vector<ReplayStep>> steps;
};

// Throws std::invalid_argument when the ranks' steps or collectives do not line up.
ReplayGroup replay_group(const std::vector<RankTrace>& group);

// Per step, the longest rank's step bounds on the virtual clock (the analysis' step time).
std::vector<double> replay_step_times(const ReplayGroup& g);
// The measured step bounds, per step, longest rank (what an unchanged replay gives back).
std::vector<double> measured_step_times(const std::vector<RankTrace>& group);

// The counterfactual edits.
// The straggler's excess removed: a rank whose compute over the steps exceeds the group's
// lower median of them (analysis' straggler reference: with 2 ranks the faster one) has each
// phase's compute scaled down to it, and a rank whose host time (between and inside its steps)
// exceeds the group's lower median has its host time scaled down to that. Transfer and the
// per-step noise stay.
ReplayGroup without_straggler(ReplayGroup g);
// No host time anywhere: inside steps and between them.
ReplayGroup without_host_gap(ReplayGroup g);
// Each rank's ops, and its transfer per collective, at their own median across steps.
ReplayGroup without_jitter(ReplayGroup g);
// Fewer, fused kernels, as far as they can go: no idle inside a step (on a GPU, the gaps at
// kernel boundaries and launches; the time between steps stays), and each op that `floor_s`
// names (by Op) no slower than its floor, one instance's seconds at its roofline. An op
// already at or under its floor is kept.
ReplayGroup with_fewer_kernels(ReplayGroup g, const std::map<int, double>& floor_s);
// Another interconnect: every collective's transfer (a phase that ends in one) takes
// `transfer_s`, what the modelled fabric gives for the message; waits follow from the replay.
ReplayGroup with_transfer(ReplayGroup g, double transfer_s);

}  // namespace tpb
