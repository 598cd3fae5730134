// cpu_gemm and skinny_gemm against a double-precision loop, over shapes that reach every path:
// skinny_gemm's token tiles (3, then 2 and 1 for m % 3) at m = 1..32 and beyond, n % 4 = 0..3
// (its four row quarters and the leftover rows, n < 4 with no quarter at all), k not a multiple
// of the vector width (the column tail) and k over the 1024-column chunk (the chunks that add
// to y), and BLAS (cpu_gemm at m > kSkinnyMaxM). The --check run cannot catch a wrong kernel on
// its own: the reference and the shards call the same one.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "layers/cpu/cpu_device.h"
#include "layers/cpu/skinny_gemm.h"

namespace tpb {
namespace {

// Deterministic values in [-1, 1) with no pattern that could hide a swapped row.
float value(int64_t i, int64_t salt) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + salt * 40503u) % 1000003u;
  return static_cast<float>(h) / 500001.5f - 1.0f;
}

using Gemm = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t);

// Every element of y = x * w^T against the dot product in double. Tolerance: a float dot
// product of length k, summed in any order (lanes, tiles, column chunks, BLAS blocking), with
// or without FMA, is within gamma_k * sum_j |x_j w_j| of the exact one, gamma_k = k u / (1 - k u)
// and u = 2^-24 (Higham, Accuracy and Stability, 2nd ed., eq. 3.5). The inputs are exact in
// double and the double loop's own error is ~2^-29 times smaller, so the bound is the float
// kernel's alone. A wrong row, token or dropped column misses it by orders of magnitude:
// the products are O(0.3) each, while k u sum|x w| is O(k^2 1e-8), 0.02 at k = 1024.
void expect_matches(Gemm gemm, int64_t m, int64_t n, int64_t k) {
  std::vector<float> x(m * k), w(n * k), y(m * n, -7.0f);
  for (int64_t i = 0; i < m * k; ++i) x[i] = value(i, 1);
  for (int64_t i = 0; i < n * k; ++i) w[i] = value(i, 2);
  gemm(x.data(), w.data(), y.data(), m, n, k);
  const double ku = static_cast<double>(k) * std::ldexp(1.0, -24);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t r = 0; r < n; ++r) {
      double want = 0, abs_sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double p = double(x[i * k + j]) * double(w[r * k + j]);
        want += p;
        abs_sum += std::fabs(p);
      }
      ASSERT_NEAR(y[i * n + r], want, ku / (1 - ku) * abs_sum + 1e-30)
          << "m=" << m << " n=" << n << " k=" << k << " at (" << i << ", " << r << ")";
    }
}

constexpr int64_t kMs[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 64};

TEST(CpuGemm, MatchesReferenceOnEveryPath) {
  for (int64_t m : kMs)
    for (int64_t n : {1, 3, 4, 5, 6, 7, 64, 130})
      for (int64_t k : {1, 5, 64, 100}) expect_matches(cpu_gemm, m, n, k);
}

// skinny_gemm itself at every m, BLAS's range included, so its tiles are pinned there too.
TEST(SkinnyGemm, MatchesReferenceAtEveryTileMix) {
  for (int64_t m : kMs)
    for (int64_t n : {2, 4, 7, 66})
      for (int64_t k : {3, 8, 9, 1023}) expect_matches(skinny_gemm, m, n, k);
}

// k over the 1024-column chunk: later chunks add to y, and the last one ends in a tail.
TEST(SkinnyGemm, MatchesReferenceAcrossColumnChunks) {
  for (int64_t m : {1, 2, 3, 8, 32})
    for (int64_t n : {5, 8})
      for (int64_t k : {1024, 1031, 2048, 3077}) expect_matches(skinny_gemm, m, n, k);
}

// tiny's sharded shapes (configs/models/tiny.json, TP 1 and 2), at the decode batches.
TEST(SkinnyGemm, MatchesReferenceOnTinyShapes) {
  struct Shape {
    int64_t n, k;
  };
  for (const Shape s : {Shape{2048, 1024}, Shape{1024, 4096}, Shape{1024, 512}, Shape{4096, 1024}})
    for (int64_t m : {1, 4, 32}) expect_matches(skinny_gemm, m, s.n, s.k);
}

TEST(SkinnyGemm, ZeroColumnsGiveZeros) {
  std::vector<float> y(3 * 6, -7.0f);
  skinny_gemm(nullptr, nullptr, y.data(), 3, 6, 0);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace tpb
