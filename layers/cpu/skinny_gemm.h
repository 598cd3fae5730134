// The CPU GEMM kernel for decode's few tokens (skinny_gemm.cc), behind cpu_gemm for
// m <= kSkinnyMaxM; declared here so that tests and benchmarks can call it at any m.
#pragma once
#include <cstdint>

namespace tpb {

// Above this many tokens cpu_gemm hands the GEMM to BLAS, which blocks for cache at prefill
// sizes (see cpu_gemm.cc for the measured crossover).
inline constexpr int64_t kSkinnyMaxM = 32;

// y[m, n] = x[m, k] * w[n, k]^T, fp32, reading w from memory once whatever m is.
void skinny_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k);

}  // namespace tpb
