// The bracket choice and the per-point line of layers/clock_map.h.
#include "layers/clock_map.h"

#include <algorithm>
#include <cstdint>

namespace tpb {

ClockSample tightest_bracket(int rounds, const std::function<ClockBracket()>& take) {
  ClockSample best;
  best.bracket_ns = INT64_MAX;
  for (int i = 0; i < std::max(rounds, 1); ++i) {
    const ClockBracket b = take();
    const int64_t width = b.host1_ns - b.host0_ns;
    if (width >= best.bracket_ns) continue;
    // The stamp lies somewhere in [host0, host1]: the midpoint is off by at most half of it.
    best.gpu_ns = b.device_ns;
    best.offset_ns = b.host0_ns + width / 2 - b.device_ns;
    best.bracket_ns = width;
  }
  return best;
}

double ClockLine::uncertainty_s() const {
  return 0.5e-9 * static_cast<double>(std::max(a_.bracket_ns, b_.bracket_ns));
}

int64_t ClockLine::interpolate(int64_t device_ns, const ClockSample& a, const ClockSample& b) {
  const int64_t span = b.gpu_ns - a.gpu_ns;
  if (span <= 0) return device_ns + b.offset_ns;
  const double frac = static_cast<double>(device_ns - a.gpu_ns) / static_cast<double>(span);
  const double off =
      static_cast<double>(a.offset_ns) + frac * static_cast<double>(b.offset_ns - a.offset_ns);
  return device_ns + static_cast<int64_t>(off);
}

}  // namespace tpb
