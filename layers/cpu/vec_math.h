// Vector basics of the CPU kernels (an 8-float value, its loads and stores, lane selects) and
// exp over a whole vector of floats, for softmax and SwiGLU. Internal to layers/cpu.
// std::exp is a library call per element that the compiler cannot vectorise without
// -ffast-math: in tiny's decode step at B = 32 the SwiGLU alone took 5.6 ms of 84 (~8 ns an
// element), more than its memory traffic needs by ~20x.
//
// V is any GCC/Clang float vector (vector_size); each caller's target clone compiles it for
// its own ISA.
#pragma once
#include <cstdint>

namespace tpb::cpu_kernels {

// Eight floats as one value: one AVX register in the x86-64-v3 clone, two SSE halves in the
// baseline one. Loads and stores go through memcpy, so no alignment is assumed. The helpers
// take and give F8 by reference: a 32-byte vector by value has a different ABI with and
// without AVX, and these are inlined into both clones.
typedef float F8 __attribute__((vector_size(32)));
[[gnu::always_inline]] inline void load8(F8& v, const float* p) {
  __builtin_memcpy(&v, p, sizeof v);
}
[[gnu::always_inline]] inline void store8(float* p, const F8& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// out = a in the lanes where m is set (all ones), b in the others; out may be a or b.
template <class V, class I>
[[gnu::always_inline]] inline void select_lanes(V& out, const I& m, const V& a, const V& b) {
  const I bits = (m & (I)a) | (~m & (I)b);
  out = (V)bits;
}

// y = exp(x) lane by lane, within 2 ulp of the true value where the result is a normal float
// (tests/unit/test_cpu_vec_math.cc). exp(x) = 2^n * e^r with n = round(x / ln 2) and
// r = x - n ln 2 in [-ln2/2, ln2/2]: ln 2 in two parts (Cody and Waite) so that r is exact
// to ~1e-10, and e^r by its Taylor series to degree 7 (the first term left out is
// 0.35^8 / 8! < 6e-9, a tenth of an ulp). 2^n is built as two normal powers of two, 2^(n/2)
// and 2^(n - n/2), so that results that overflow or fall below the normal range come out as
// inf, a denormal or 0 from the multiplication itself. Inputs are clamped first, so that n
// fits an int (exp(-104) is already below the smallest denormal, exp(89) above FLT_MAX);
// NaN stays NaN.
template <class V>
[[gnu::always_inline]] inline void exp_lanes(V& y, const V& x) {
  using I = decltype(x < x);
  const V zero = {};
  const V lo = zero - 104.0f, hi = zero + 89.0f;
  const I nan = x != x;
  V xc;
  select_lanes(xc, x < lo, lo, x);
  select_lanes(xc, xc > hi, hi, xc);
  select_lanes(xc, nan, zero, xc);  // NaN would not convert to an int; it is put back below
  // Round to nearest by adding and removing 1.5 * 2^23 (|x / ln 2| < 2^22 after the clamp).
  const V shift = zero + 12582912.0f;
  const V n = (xc * 1.44269504088896341f + shift) - shift;
  const V r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  V p = zero + 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I ni = __builtin_convertvector(n, I);
  const I half = ni >> 1;  // arithmetic shift: floor(n / 2)
  const V s1 = (V)((half + 127) << 23), s2 = (V)((ni - half + 127) << 23);
  const V e = p * s1 * s2;
  select_lanes(y, nan, x, e);
}

}  // namespace tpb::cpu_kernels
