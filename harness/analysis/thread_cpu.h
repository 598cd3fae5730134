// The calling thread's CPU time and involuntary context switches, read around the measured
// steps. Wall time minus CPU time is the time the scheduler kept the rank's thread off a core:
// on an oversubscribed or shared host it lands inside compute segments and collective waits
// alike, and no analysis of the timeline can tell it from real work, so results report it.
#pragma once

#include <cstdint>

namespace tpb {

struct ThreadCpu {
  double cpu_s = 0;                  // CLOCK_THREAD_CPUTIME_ID
  int64_t involuntary_switches = 0;  // getrusage(RUSAGE_THREAD).ru_nivcsw
};

ThreadCpu thread_cpu_now();

// 1 - cpu / wall over an interval, clamped to [0, 1]; 0 for an empty interval.
double descheduled_fraction(double wall_s, double cpu_s);

}  // namespace tpb
