#include "harness/analysis/thread_cpu.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>

namespace tpb {

ThreadCpu thread_cpu_now() {
  ThreadCpu t;
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    t.cpu_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) t.involuntary_switches = ru.ru_nivcsw;
  return t;
}

double descheduled_fraction(double wall_s, double cpu_s) {
  if (wall_s <= 0) return 0;
  return std::clamp(1.0 - cpu_s / wall_s, 0.0, 1.0);
}

}  // namespace tpb
