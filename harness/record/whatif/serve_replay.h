// A measured serve point rebuilt for replay: its requests and scheduler config from the point's
// params and requests log, its measured steps from the step log, and the scheduler rerun with
// the measured step times, which must give back the logged batches (the scheduler is
// deterministic given arrivals and step times), so every counterfactual starts from the plans
// that really ran.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/record/whatif/whatif_record.h"
#include "harness/serve/scheduler.h"
#include "harness/serve/serve_metrics.h"

namespace tpb {

struct MeasuredStep {
  double duration_s = 0, device_time_s = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;  // what the rebuilt plan must hold
  std::vector<double> rank_compute_s;             // per rank, in the log's order
  std::vector<double> rank_transfer_s;            // per rank, as rank_compute_s
  std::vector<double> rank_host_s;  // per rank, in the step outside its ops; empty before 1.21.0
};

struct ServeReplayBase {
  SchedulerConfig cfg;
  std::vector<Request> requests;
  int64_t warmup = 0;
  SloSpec slo;
  std::vector<MeasuredStep> steps;
  std::vector<StepPlan> plans;  // the measured run's, rebuilt: plans[k] ran as steps[k]
  WhatifFigures measured;       // the point's own serving metrics
  WhatifFigures unchanged;      // the rebuilt plans' figures (measured step times)
};

// Rebuilds point `index` from the logs in `dir`. Returns the reason it cannot ("" and `out`
// filled when it can). Throws BadInput naming the field for a log that cannot be read.
std::string rebuild_serve_point(const nlohmann::ordered_json& point, int index,
                                const std::string& dir, ServeReplayBase& out);

// The serving run of `base`'s requests under `cfg`, with `duration(plan, k)` the k-th non-empty
// step's time, as figures (tokens_per_s is output tokens/s, as vLLM reports it).
WhatifFigures replay_serve(const ServeReplayBase& base, const SchedulerConfig& cfg,
                           const std::function<double(const StepPlan&, std::size_t)>& duration,
                           int64_t* preemptions = nullptr);

}  // namespace tpb
