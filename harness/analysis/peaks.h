// The peaks a point is judged against (per device, for the point's dtype) and where they came
// from: a hardware profile's datasheet figures, a calibrated profile, or the start-up probe.
#pragma once
#include <string>

namespace tpb {

struct Peaks {
  double flops = 0;  // per device, for the point's dtype
  double bw = 0;     // per device
  std::string source;
};

}  // namespace tpb
