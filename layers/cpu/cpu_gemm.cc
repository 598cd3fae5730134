// y = x * W^T on the CPU: decode's few tokens go to skinny_gemm, prefill's many to BLAS.
//
// OpenBLAS sgemm packs W into panels before it multiplies, which pays off only when each
// panel is reused across many tokens; for decode it streams W at a few GB/s, where
// skinny_gemm reads it once at close to the core's stream bandwidth. Side by side (fp32, 1
// thread, tiny's four TP-1 GEMMs, best of 5; OpenBLAS 0.3.21 on its Cooperlake core, which
// tpbench forces, blas_core.h; skinny_gemm's AVX-512 path; machine loaded by other builds):
// skinny_gemm is 2.6-3.3x faster at m = 1, 2.2-2.5x at m = 8 and 1.4-1.5x at m = 32
// (tests/bench/bench_skinny_gemm.cc). Prefill (m = batch x prompt, hundreds of tokens) stays on
// BLAS, whose cache blocking is what reaches the probe's sgemm FLOP/s there.
#include <cblas.h>

#include <cstdint>
#include <vector>

#include "layers/cpu/cpu_device.h"
#include "layers/cpu/skinny_gemm.h"

namespace tpb {

void cpu_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
              std::vector<float>& scratch) {
  if (m <= kSkinnyMaxM) return skinny_gemm(x, w, y, m, n, k, scratch);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(k), 0.0f, y,
              static_cast<int>(n));
}

}  // namespace tpb
