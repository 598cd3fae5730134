// ServeSpec: one validated `tpbench serve` run. The serve options are read here; everything
// else (backend, model, tp, inject, memory budget, ...) is a RunSpec, resolved by
// resolve_run_spec, so `run` and `serve` share one vocabulary and one set of checks.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/config/run_spec.h"
#include "harness/serve/scheduler.h"
#include "harness/serve/serve_metrics.h"
#include "harness/serve/workload.h"

namespace tpb {

// The default number of measured requests per point (--requests, vLLM's --num-prompts).
inline constexpr int64_t kDefaultServeRequests = 64;

// --save-result: vLLM's result file per load, beside tpbench's own results folder.
struct VllmSaveSpec {
  bool on = false;
  std::string dir;       // --result-dir (default: the --out folder)
  std::string filename;  // --result-filename (default: vLLM's pattern)
};

struct ServeSpec {
  RunSpec run;
  // What one rank builds of the serving TP model (the caller sets its serve shape, from the
  // memory plan): run's model in decode at one token from position 0, the fixed-mode fields
  // a serving model does not read, and no fixed-mode LM head (serving reads serve.lm_head).
  TpModelConfig model_config(int64_t layers, int tp_rank) const;
  // The load axis: "concurrency" (closed loop) or "rate" (open loop), one point per value.
  std::string axis = "concurrency";
  std::vector<double> loads;
  LoadSpec load;  // concurrency / rate are set per point from `loads`
  SchedulerKind scheduler = SchedulerKind::continuous;
  int64_t chunk = 0;
  int64_t max_batch = 0;         // 0: the point's concurrency (closed loop) or 64 (open loop)
  int64_t max_step_tokens = 0;   // without a chunk: tokens per step at most (0: 8192)
  int64_t kv_budget_tokens = 0;  // 0: what the memory budget leaves after weights/activations
  int64_t block_tokens = 16;
  double host_overhead_s = 0;  // per step, spun on the host before the step's device work
  bool lm_head = true;
  SloSpec slo;
  std::vector<GpuPrice> prices;   // --price as given
  std::optional<GpuPrice> price;  // the one for the run's hardware (resolve_serve_price)
  std::string resume;             // --resume DIR: the results folder of the run to continue
  VllmSaveSpec vllm;  // an output choice, not the run's identity: not in the results' config

  // The point's load spec and scheduler config for loads[i] (max_ctx and kv_blocks are
  // filled by the driver once the memory plan is known).
  LoadSpec load_at(std::size_t i) const;
  SchedulerConfig scheduler_at(std::size_t i) const;
};

// The config keys serve reads on top of RunSpec's (and the RunSpec keys it refuses).
std::vector<std::string> serve_keys();

// Throws BadInput naming the field.
ServeSpec resolve_serve_spec(const nlohmann::json& cfg, int world,
                             const std::string& default_config_dir);

// The point's price once the hardware is final (a GPU adopts its own profile after the spec is
// resolved): --price's entry for it, else its profile's price_per_hour, else none. Throws
// BadInput naming --price when prices were given and none is for this GPU.
void resolve_serve_price(ServeSpec& s);

// The serve options echoed into results.json's config (beside run_spec_to_json's keys).
nlohmann::ordered_json serve_spec_to_json(const ServeSpec& s);

}  // namespace tpb
