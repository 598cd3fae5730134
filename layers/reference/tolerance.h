// --check's tolerance: how far a device's step may sit from the fp64 host reference, by dtype
// and depth. Header only, so the results' record can state the rule without linking the
// reference.
//
// Notation: u = unit roundoff of the storage dtype (dtype_round.h: fp32 2^-24, bf16 2^-8,
// fp16 2^-11); u32 = 2^-24, for every backend's GEMMs and reductions accumulate in fp32
// (layers/device.h); k = the longest sum of a GEMM, max(hidden, heads * head_dim,
// intermediate); B = the blocks of the step: 2 per layer (attention, MLP), +1 for the LM head.
//
// One block adds to the residual stream a term the device computes with a relative error of
//   e_block ~ u + u32 sqrt(k):
// its ops round their outputs to the dtype (u each), and an fp32 sum of k terms drifts by about
// u32 sqrt(k) of its size (the probabilistic rounding bound of Higham and Mary, 2019). The
// blocks round independently, and RMSNorm rescales what each block reads, so their errors add
// up as a random walk, not a product:
//   e_step = sqrt(B) e_block          (expected_relative_error)
// The check compares max |got - ref| with max |ref|; over thousands of elements both maxima
// sit a similar few standard deviations out, so their ratio is that of the typical error to
// the typical element, about e_step. The tolerance is
//   tolerance = kSafety e_step max |ref|,   kSafety = 4
// for the few roundings per block (norm, projections, activation, residual add) and the
// spread of the maxima.
//
// Measured (max|got - ref| / max|ref| against e_step): an H200 in bf16 and fp16, tiny and
// Llama-3.1-8B, decode and prefill, batch 1 to 16: 0.6-0.8 e_step, i.e. 0.15-0.20 of the
// tolerance; in fp32 (OpenBLAS on the CPU backend, cuBLAS) 0.02-0.04 e_step, 0.005-0.01 of it. A
// wrong shard, a wrong seed or a lost all-reduce errs by the order of the output itself (about 1/3
// of max |ref|: the typical element), above the tolerance for the shapes here: tiny (h 1024, I
// 4096, 8 layers) fp32 6.2e-5, bf16 0.063; Llama-3.1-8B (32 layers, k = 14336) fp32 2.3e-4, bf16
// 0.125 of max |ref|.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "layers/model_shape.h"
#include "layers/reference/dtype_round.h"

namespace tpb::ref {

inline constexpr double kToleranceSafety = 4.0;

// The longest sum of a GEMM in one layer.
inline int64_t longest_sum(const ModelShape& m) {
  return std::max({m.hidden, m.n_heads * m.head_dim, m.intermediate, int64_t{1}});
}

// e_step: the typical relative error of a step computed in `t` over `layers` layers of `m` (and
// the LM head after them when `lm_head`).
inline double expected_relative_error(DType t, const ModelShape& m, int64_t layers, bool lm_head) {
  const double u = unit_roundoff(t), u32 = std::ldexp(1.0, -24);
  const double blocks = static_cast<double>(2 * layers + (lm_head ? 1 : 0));
  return std::sqrt(std::max(1.0, blocks)) *
         (u + u32 * std::sqrt(static_cast<double>(longest_sum(m))));
}

// The largest max|got - ref| accepted, as a fraction of max|ref|.
inline double relative_tolerance(DType t, const ModelShape& m, int64_t layers, bool lm_head) {
  return kToleranceSafety * expected_relative_error(t, m, layers, lm_head);
}

// The rule in words, with its inputs and result, for the results.
inline std::string tolerance_rule(DType t, const ModelShape& m, int64_t layers) {
  char text[200];
  std::snprintf(text, sizeof text,
                "%g sqrt(B) (u + 2^-24 sqrt(k)) max|ref|: u = 2^%d (%s), B = %lld blocks, "
                "k = %lld; %.3g of max|ref|",
                kToleranceSafety, static_cast<int>(std::lround(std::log2(unit_roundoff(t)))),
                dtype_name(t), static_cast<long long>(2 * layers),
                static_cast<long long>(longest_sum(m)), relative_tolerance(t, m, layers, false));
  return text;
}

}  // namespace tpb::ref
