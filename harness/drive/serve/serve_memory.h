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
  bool fits = false;
};

// `have`: the bytes the rank may use (the budget or the device's memory, less --inject
// mem_reserve). The KV cache gets what is left after the rest, but no more than the scheduler
// could ever fill (max_running sequences at the longest request), or exactly --kv-budget.
ServeMemory plan_serve_memory(const ServeSpec& spec, const SchedulerConfig& sc,
                              const std::vector<Request>& reqs, double have);

}  // namespace tpb
