// cpu_gemm and skinny_gemm against a double-precision loop, over shapes that reach every path:
// each of skinny_gemm's two paths (generic: 8 lanes, tiles of up to 3 tokens; avx512: 16
// lanes, up to 6, and past kLanesFrom tokens in the lanes of one vector up to 16 tokens and
// of two past it, 12 rows a tile and the rest one by one) at every m = 1..33 (every tile size,
// every split into even tiles, both lane counts) and beyond, n % 4 = 0..3 (its four row quarters
// and the leftover rows, n < 4 with no quarter at all), k % 16 and k % 8 tails (the prefetching
// 16-column loop, the vector loop, the scalar tail), k = 0, k over the 1024-column chunk (the
// chunks that add to y), and BLAS (cpu_gemm at m > kSkinnyMaxM). The --check run cannot catch a
// wrong kernel on its own: the reference and the shards call the same one.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "layers/cpu/cpu_device.h"
#include "layers/cpu/skinny_gemm.h"
#include "layers/cpu/target_clones.h"

namespace tpb {
namespace {

// Deterministic values in [-1, 1) with no pattern that could hide a swapped row.
float value(int64_t i, int64_t salt) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + salt * 40503u) % 1000003u;
  return static_cast<float>(h) / 500001.5f - 1.0f;
}

using Gemm = void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t,
                      std::vector<float>&);

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
  std::vector<float> scratch;
  gemm(x.data(), w.data(), y.data(), m, n, k, scratch);
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

// Each path by name, and skinny_gemm itself (whichever path this CPU takes).
struct Path {
  const char* name;
  Gemm gemm;
};
constexpr Path kPaths[] = {
    {"generic", skinny_gemm_generic}, {"avx512", skinny_gemm_avx512}, {"dispatch", skinny_gemm}};

class SkinnyGemmPath : public testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (std::string(GetParam().name) == "avx512" && !skinny_gemm_has_avx512())
      GTEST_SKIP() << "no AVX-512 path here (CPU without it, or a build without ISA variants)";
  }
};

// m = 1..33 takes every tile size of both paths and every split into even tiles, k every
// tail: under 8, 8 (no 16-lane vector), 8 + 7 and 16 + 8 (one vector and a tail), 16 and 32
// (the prefetching loop alone), 1023 (all three).
TEST_P(SkinnyGemmPath, MatchesReferenceAtEveryTileAndTail) {
  for (int64_t m = 1; m <= 33; ++m)
    for (int64_t n : {2, 4, 7, 66})
      for (int64_t k : {3, 8, 15, 16, 24, 32, 1023}) expect_matches(GetParam().gemm, m, n, k);
  for (int64_t k : {1, 9, 17, 100}) expect_matches(GetParam().gemm, 64, 5, k);
}

// k over the 1024-column chunk: later chunks add to y, and the last one ends in a tail.
TEST_P(SkinnyGemmPath, MatchesReferenceAcrossColumnChunks) {
  for (int64_t m : {1, 2, 3, 6, 7, 8, 32})
    for (int64_t n : {5, 8})
      for (int64_t k : {1024, 1031, 1048, 2048, 3077}) expect_matches(GetParam().gemm, m, n, k);
}

// tiny's sharded shapes (configs/models/tiny.json, TP 1 and 2), at the decode batches.
TEST_P(SkinnyGemmPath, MatchesReferenceOnTinyShapes) {
  struct Shape {
    int64_t n, k;
  };
  for (const Shape s : {Shape{2048, 1024}, Shape{1024, 4096}, Shape{1024, 512}, Shape{4096, 1024}})
    for (int64_t m : {1, 4, 8, 16, 32}) expect_matches(GetParam().gemm, m, s.n, s.k);
}

TEST_P(SkinnyGemmPath, ZeroColumnsGiveZeros) {
  for (int64_t m : {1, 3, 6, 13}) {
    std::vector<float> y(m * 6, -7.0f), scratch;
    GetParam().gemm(nullptr, nullptr, y.data(), m, 6, 0, scratch);
    for (float v : y) EXPECT_EQ(v, 0.0f) << "m=" << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, SkinnyGemmPath, testing::ValuesIn(kPaths),
                         [](const testing::TestParamInfo<Path>& i) { return i.param.name; });

// The AVX-512 path is what runs, and is tested, wherever the CPU has x86-64-v4's AVX-512 and
// the build has the variant; a build or CPU without it says so here rather than passing quietly.
TEST(SkinnyGemm, Avx512PathTakenWhereTheCpuHasIt) {
#if defined(__x86_64__) && !defined(TPB_NO_CLONES)
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
    GTEST_SKIP() << "this CPU has no AVX-512";
  EXPECT_TRUE(skinny_gemm_has_avx512());
#else
  GTEST_SKIP() << "a build without ISA variants";
#endif
}

// The fill writes a shard of a full tensor: every element the same bits as fill_value, the
// row tails (cols not a multiple of any vector width) included, and nothing past dst_ld's row.
TEST(CpuFill, ShardMatchesFillValueBitForBit) {
  CpuDevice dev{DeviceOptions{}};
  const FillSpec f{9, 0.3f, 1000, 5, 3, 17, 37, 40, 2};
  const std::size_t total = 2 + 3 * 40;
  std::vector<float> pattern(total, -7.0f);
  DeviceBuffer buf = dev.alloc(total * sizeof(float));
  dev.upload(buf.get(), pattern.data(), total, DType::fp32);
  dev.fill(buf.get(), DType::fp32, f);
  std::vector<float> got(total);
  dev.download(got.data(), buf.get(), total, DType::fp32);
  for (int64_t i = 0; i < f.rows; ++i)
    for (int64_t j = 0; j < f.dst_ld; ++j) {
      const float v = got[static_cast<std::size_t>(2 + i * f.dst_ld + j)];
      if (j < f.cols)
        EXPECT_EQ(v, fill_value(f, i, j)) << "row " << i << " col " << j;
      else
        EXPECT_EQ(v, -7.0f) << "row " << i << " col " << j << " is past the shard";
    }
  EXPECT_EQ(got[0], -7.0f);
  EXPECT_EQ(got[1], -7.0f);
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

// A decode step only reads: its bandwidth peak is the faster read-only probe, and axpy's
// write stream (however fast) never sets it (issue 32, item 9).
TEST(CpuProbe, ReadOnlyProbesSetTheBandwidthPeak) {
  ProbeResult p;
  p.read_bw = 10e9;
  p.stream_bw = 12e9;
  p.axpy_bw = 20e9;
  EXPECT_DOUBLE_EQ(p.bw(), 12e9);
  EXPECT_STREQ(p.bw_probe(), "skinny_gemm m=1");
  p.read_bw = 13e9;
  EXPECT_DOUBLE_EQ(p.bw(), 13e9);
  EXPECT_STREQ(p.bw_probe(), "sdot");
}

}  // namespace
}  // namespace tpb
