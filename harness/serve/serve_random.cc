// Fixed-algorithm draws (see serve_random.h for why the standard distributions are not used).
#include "harness/serve/serve_random.h"

#include <cmath>
#include <numbers>

namespace tpb {

double draw_unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

int64_t draw_int(std::mt19937_64& rng, int64_t a, int64_t b) {
  const uint64_t span = static_cast<uint64_t>(b - a) + 1;  // 0 means the whole 64-bit range
  if (span == 0) return static_cast<int64_t>(rng());
  // Values at or above `limit` would make some residues one draw likelier than others.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return a + static_cast<int64_t>(x % span);
}

double draw_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - draw_unit(rng);  // (0, 1]: log(u1) is finite
  const double u2 = draw_unit(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double draw_gamma(std::mt19937_64& rng, double shape) {
  if (shape < 1.0) {
    const double u = 1.0 - draw_unit(rng);
    return draw_gamma(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = draw_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - draw_unit(rng);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace tpb
