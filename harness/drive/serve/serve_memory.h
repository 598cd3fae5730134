// A serving point's memory plan, on a real rank (serve_runner) and on virtual ranks
// (drive/model/virtual_serve) alike: weights, activations and logits first, then a paged KV
// cache from what is left.
#pragma once
#include <cstdint>
#include <vector>

#include "harness/config/serve_spec.h"
#include "harness/serve/scheduler.h"
#include "layers/step_batch.h"

namespace tpb {

struct ServeMemory {
  ServeShape shape;
  int64_t layers = 0;
  double need = 0, have = 0;
  // With `reference`: the peak of serve --check on this rank, its small sharded model and the
  // unsharded one side by side (both freed before the serving model is built), and whether
  // that alone is what does not fit.
  double check = 0;
  bool check_blame = false;
  bool fits = false;
};

// `have`: the bytes the rank may use (the budget or the device's memory, less --inject
// mem_reserve). The KV cache gets what is left after the rest, but no more than the scheduler
// could ever fill (max_running sequences at the longest request), or exactly --kv-budget.
// `reference`: this rank runs serve --check's unsharded model (group rank 0 with --check).
ServeMemory plan_serve_memory(const ServeSpec& spec, const SchedulerConfig& sc,
                              const std::vector<Request>& reqs, double have,
                              bool reference = false);

}  // namespace tpb
