// The CPU GEMM kernel for decode's few tokens (skinny_gemm.cc), behind cpu_gemm for
// m <= kSkinnyMaxM; declared here so that tests and benchmarks can call it at any m.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpb {

// Above this many tokens cpu_gemm hands the GEMM to BLAS, which blocks for cache at prefill
// sizes (see cpu_gemm.cc for the measured crossover).
inline constexpr int64_t kSkinnyMaxM = 32;

// From this many tokens on, the AVX-512 path puts the tokens in the vector lanes (skinny_gemm.cc).
inline constexpr int64_t kLanesFrom = 12;

// y[m, n] = x[m, k] * w[n, k]^T, fp32, reading w from memory once whatever m is.
// Runs the AVX-512 path where the CPU has it (skinny_gemm_has_avx512), else the generic one.
// `scratch` holds x repacked for the lanes path: grown to skinny_gemm_scratch_floats(m, k) on
// first use (a warm-up step), untouched by the generic path.
void skinny_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                 std::vector<float>& scratch);
std::size_t skinny_gemm_scratch_floats(int64_t m, int64_t k);

// The two paths by name, so that tests pin each and benchmarks hold them side by side.
// generic: 8-lane vectors, tiles of 3 tokens (x86-64-v3 clone where AVX2 is, else baseline).
void skinny_gemm_generic(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                         std::vector<float>& scratch);
// avx512: 16-lane vectors, tiles of 6 tokens up to kLanesFrom, tokens in lanes past it; the
// generic path where the build has no x86-64-v4 variant (non-x86, or TSan, which turns the ISA
// variants off).
void skinny_gemm_avx512(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                        std::vector<float>& scratch);
// True where skinny_gemm_avx512 is built and this CPU runs it.
bool skinny_gemm_has_avx512();

}  // namespace tpb
