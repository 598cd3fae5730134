// The running maximum of |got - want| that every output check here takes, NaN-aware: one
// definition for the layer check (ref_ops.cc), --check (ref_check.cc) and the FP8 check
// (tests/gpu/fp8_check.cc).
#pragma once
#include <algorithm>
#include <cmath>

namespace tpb::ref {

// The larger of `err` and |got - want|; infinite when either side is a NaN or an infinity.
// A plain std::max(err, |got - want|) keeps `err` for a NaN (every comparison with a NaN is
// false), so an all-NaN output, the likeliest failure of a new kernel, would read as exact.
inline double worse_error(double err, double got, double want) {
  const double e = std::fabs(got - want);
  return std::isfinite(e) ? std::max(err, e) : INFINITY;
}

}  // namespace tpb::ref
