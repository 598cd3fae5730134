// What a device holds after it stores an fp32 value in a narrower dtype: round to nearest, ties
// to even, as the CUDA kernels' __float2bfloat16_rn / __float2half_rn do. Host only, no CUDA
// headers, so the host reference sees the very weights, caches and inputs a bf16/fp16 run fills.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "base/dtype.h"
#include "base/errors.h"

namespace tpb::ref {

// Unit roundoff u of a storage dtype: half the gap between 1 and the next value (2^-p for p
// significant bits). fp32 2^-24, bf16 2^-8, fp16 2^-11.
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::fp32:
      return std::ldexp(1.0, -24);
    case DType::bf16:
      return std::ldexp(1.0, -8);
    case DType::fp16:
      return std::ldexp(1.0, -11);
    case DType::fp8:
      break;
  }
  throw BadInput(std::string("--check: no host reference for --dtype ") + dtype_name(t));
}

// v rounded to keep the top `keep` of fp32's 23 fraction bits, ties to even, on the bits (a
// carry into the exponent is the correct rounding up; the largest values carry into infinity):
// exact wherever the narrow type's exponent range covers v's.
inline float round_fraction_bits(float v, int keep) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  const int drop = 23 - keep;
  const uint32_t half = (uint32_t{1} << (drop - 1)) - 1, lsb = (b >> drop) & 1u;
  b = (b + half + lsb) & ~((uint32_t{1} << drop) - 1);
  return std::bit_cast<float>(b);
}

// fp16 below its smallest normal (2^-14): spacing 2^-24, rounded in double by nearbyint (ties
// to even in the default mode; scaling by a power of two is exact).
inline float round_fp16_subnormal(float v) {
  return static_cast<float>(
      std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(v), 24)), -24));
}

inline float round_to_dtype(float v, DType t) {
  switch (t) {
    case DType::fp32:
      return v;
    case DType::bf16:  // fp32's exponent range: only the fraction is cut, to 7 bits
      return std::isfinite(v) ? round_fraction_bits(v, 7) : v;
    case DType::fp16: {
      if (!std::isfinite(v)) return v;
      if (std::fabs(v) < 0x1p-14f) return round_fp16_subnormal(v);
      const float r = round_fraction_bits(v, 10);
      return std::fabs(r) > 65504.0f ? std::copysign(INFINITY, v) : r;
    }
    case DType::fp8:
      break;
  }
  throw BadInput(std::string("--check: no host reference for --dtype ") + dtype_name(t));
}

}  // namespace tpb::ref
