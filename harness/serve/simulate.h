// Runs a Scheduler to the end on a virtual clock with a given step duration: for tests and
// dry runs of a policy. The real driver does not use it (its step durations are measured and
// agreed across ranks), but it follows the same protocol: plan, run, finish, or jump the
// clock to next_ready_s when nothing can run.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "harness/serve/scheduler.h"

namespace tpb {

struct SimResult {
  std::vector<StepPlan> steps;  // the non-empty plans, in order (index = step_index)
  std::vector<double> end_s;    // when each step ended
  double clock_s = 0;           // the clock at done()
};

// Throws std::runtime_error after `max_steps` plans (empty ones included) or when an empty
// plan leaves the clock where it was twice running, so a scheduler bug fails instead of hangs.
SimResult simulate(Scheduler& s, const std::function<double(const StepPlan&)>& step_duration,
                   int64_t max_steps = 1'000'000);

}  // namespace tpb
