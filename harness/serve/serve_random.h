// Portable random draws for `tpbench serve`. The standard library's distributions are
// implementation-defined (libstdc++ and libc++ draw different numbers from the same engine), so
// a seed would name a different workload under each toolchain; these are fixed algorithms on
// std::mt19937_64, whose output the standard does fix.
#pragma once
#include <cstdint>
#include <random>

namespace tpb {

// Uniform on [0, 1) from the top 53 bits (a double's mantissa).
double draw_unit(std::mt19937_64& rng);
// Uniform integer on [a, b] inclusive, unbiased (rejection of the partial last range).
int64_t draw_int(std::mt19937_64& rng, int64_t a, int64_t b);
// Standard normal (Box-Muller; one value per call, the second discarded for simplicity).
double draw_normal(std::mt19937_64& rng);
// Gamma(shape, scale = 1) by Marsaglia and Tsang (2000); shape < 1 via the boost
// gamma(a) = gamma(a + 1) * U^(1/a). Mean = shape, variance = shape.
double draw_gamma(std::mt19937_64& rng, double shape);

}  // namespace tpb
