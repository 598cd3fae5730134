// The host's monotonic clock, the one time base every CPU-side stamp and host timing uses
// (CPU device marks, clock sync, sweep progress, collective sweeps).
#pragma once
#include <chrono>
#include <cstdint>

namespace tpb {

inline int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double now_s() {
  return static_cast<double>(steady_now_ns()) * 1e-9;
}

}  // namespace tpb
