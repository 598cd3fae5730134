// Runs one serving point on every rank of the TP group: the memory plan (weights, activations
// and a paged KV cache from what is left), warm-up, then the serving loop on a virtual clock,
// clock sync, and the gather of every rank's timeline to rank 0.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "harness/analysis/peaks.h"
#include "harness/analysis/step_breakdown.h"
#include "harness/config/serve_spec.h"
#include "harness/mpi/world.h"
#include "harness/record/point_builder.h"
#include "harness/record/point_record.h"
#include "harness/serve/scheduler.h"
#include "layers/cost_model.h"
#include "layers/device.h"

namespace tpb {

// One step of the serving loop as every rank agreed it.
struct ServeStep {
  StepPlan plan;
  double end_s = 0;       // virtual clock when the step ended
  double duration_s = 0;  // the group's max over ranks of the loop iteration
  StepCost cost;          // the cost model's figures for this step (per rank)
};

// What rank 0 has after a serving point: everything needed to build its record and its logs.
struct ServeRun {
  int64_t layers = 0;
  SchedulerConfig sched;
  std::vector<ServeStep> steps;
  std::vector<RequestLog> requests;
  std::vector<StepSplit> splits;  // per measured step, per rank
  std::vector<RankTrace> traces;
  std::vector<RankSample> samples;
  int64_t preemptions = 0;
  // The steps the traces hold, in order; empty: every step. The model backend samples a long
  // run's timeline (drive/model/virtual_serve.h); splits cover every step regardless.
  std::vector<int> timeline_steps;
  // The model backend under an engine with tables: what priced each op over the run's steps.
  OpPricingMap op_pricing;
};

// Either the run (rank 0), or on rank 0 an oom record when the point does not fit; nothing on
// the other ranks. Collective over the world.
struct ServeResult {
  std::optional<ServeRun> run;
  std::optional<PointRecord> oom;
};
ServeResult run_serve_point(const ServeSpec& spec, std::size_t load_index, const World& w,
                            Device& dev);

// The step the scheduler plans at `clock`, for the serving loops of measured and of virtual
// ranks alike. Empty when nothing can run yet: the clock then jumps to the next arrival.
StepPlan plan_or_wait(Scheduler& sched, double& clock);

}  // namespace tpb
