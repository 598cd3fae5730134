// The virtual-clock loop for tests and dry runs (see simulate.h).
#include "harness/serve/simulate.h"

#include <stdexcept>
#include <string>

namespace tpb {

SimResult simulate(Scheduler& s, const std::function<double(const StepPlan&)>& step_duration,
                   int64_t max_steps) {
  SimResult r;
  double now = 0;
  int stalls = 0;  // empty plans in a row with no clock to jump to
  for (int64_t n = 0; !s.done(); ++n) {
    if (n >= max_steps)
      throw std::runtime_error("serve simulate: not done after " + std::to_string(max_steps) +
                               " plans");
    StepPlan p = s.plan(now);
    if (p.empty()) {
      const double next = s.next_ready_s(now);
      stalls = next > now ? 0 : stalls + 1;
      if (stalls >= 2)
        throw std::runtime_error("serve simulate: nothing can run and nothing will arrive at t=" +
                                 std::to_string(now));
      now = next;
      continue;
    }
    stalls = 0;
    now += step_duration(p);
    s.finish(p, now, static_cast<int64_t>(r.steps.size()));
    r.steps.push_back(std::move(p));
    r.end_s.push_back(now);
  }
  r.clock_s = now;
  return r;
}

}  // namespace tpb
