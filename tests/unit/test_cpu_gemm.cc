// cpu_gemm against a double-precision loop, over shapes that reach every path of the kernel:
// the skinny kernel (m <= 8) with n % 4 = 0..3 (its four row quarters and the leftover rows),
// k not a multiple of the vector width, and BLAS (m > 8). The --check run cannot catch a wrong
// kernel on its own: the reference and the shards call the same one.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "layers/cpu/cpu_device.h"

namespace tpb {
namespace {

// Deterministic values in [-1, 1) with no pattern that could hide a swapped row.
float value(int64_t i, int64_t salt) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + salt * 40503u) % 1000003u;
  return static_cast<float>(h) / 500001.5f - 1.0f;
}

TEST(CpuGemm, MatchesReferenceOnEveryPath) {
  for (int64_t m : {1, 2, 3, 8, 9, 17})
    for (int64_t n : {1, 3, 4, 5, 6, 7, 64, 130})
      for (int64_t k : {1, 5, 64, 100}) {
        std::vector<float> x(m * k), w(n * k), y(m * n, -7.0f);
        for (int64_t i = 0; i < m * k; ++i) x[i] = value(i, 1);
        for (int64_t i = 0; i < n * k; ++i) w[i] = value(i, 2);
        cpu_gemm(x.data(), w.data(), y.data(), m, n, k);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t r = 0; r < n; ++r) {
            double want = 0;
            for (int64_t j = 0; j < k; ++j) want += double(x[i * k + j]) * double(w[r * k + j]);
            ASSERT_NEAR(y[i * n + r], want, 1e-5 * (1.0 + double(k)))
                << "m=" << m << " n=" << n << " k=" << k << " at (" << i << ", " << r << ")";
          }
      }
}

}  // namespace
}  // namespace tpb
