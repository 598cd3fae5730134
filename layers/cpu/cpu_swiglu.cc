// SwiGLU on the CPU: out[r, i] = silu(g) * u, g = gate_up[r, i] and u = gate_up[r, inter + i].
// Eight lanes at a time with the vectorised exp (vec_math.h); the inter % 8 left over go
// through one more vector padded with zeros, so every element takes the same arithmetic.
#include <algorithm>

#include "layers/cpu/cpu_device.h"
#include "layers/cpu/target_clones.h"
#include "layers/cpu/vec_math.h"

namespace tpb {

using namespace cpu_kernels;

namespace {

// silu(g) * u = g / (1 + exp(-g)) * u; exp(-g) = inf for g < -89 gives -0, as the formula does.
[[gnu::always_inline]] inline void swiglu8(const F8& g, const F8& u, F8& out) {
  const F8 neg = -g;
  F8 e;
  exp_lanes(e, neg);
  out = g / (1.0f + e) * u;
}

}  // namespace

TPB_CLONES void cpu_swiglu(const float* gate_up, float* out, int64_t rows, int64_t inter) {
  const int64_t body = inter / 8 * 8, tail = inter - body;
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = gate_up + r * 2 * inter;
    const float* u = g + inter;
    float* o = out + r * inter;
    F8 gv, uv, ov;
    for (int64_t i = 0; i < body; i += 8) {
      load8(gv, g + i);
      load8(uv, u + i);
      swiglu8(gv, uv, ov);
      store8(o + i, ov);
    }
    if (tail > 0) {
      float gp[8] = {}, up[8] = {}, op[8];
      std::copy_n(g + body, tail, gp);
      std::copy_n(u + body, tail, up);
      load8(gv, gp);
      load8(uv, up);
      swiglu8(gv, uv, ov);
      store8(op, ov);
      std::copy_n(op, tail, o + body);
    }
  }
}

}  // namespace tpb
