// The CPU kernels' vectorised exp (vec_math.h) against double-precision exp, and the two
// kernels built on it, SwiGLU and softmax, against plain double-precision references.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "layers/cpu/attention_kernels.h"
#include "layers/cpu/cpu_device.h"
#include "layers/cpu/vec_math.h"

namespace tpb {
namespace {

using cpu_kernels::F8;

std::vector<float> exp_of(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i + 8 <= x.size(); i += 8) {
    F8 v, e;
    cpu_kernels::load8(v, x.data() + i);
    cpu_kernels::exp_lanes(e, v);
    cpu_kernels::store8(y.data() + i, e);
  }
  return y;
}

// |got - want| in units of the last place of want, where want is a normal float.
double ulps(float got, double want) {
  int e = 0;
  std::frexp(want, &e);  // want = f * 2^e, f in [0.5, 1)
  return std::fabs(got - want) / std::ldexp(1.0, e - 24);
}

TEST(CpuVecMath, ExpWithinTwoUlpsOverTheWholeRange) {
  std::vector<float> x;
  for (double v = -110.0; v < 95.0; v += 1.0 / 1024) x.push_back(static_cast<float>(v));
  while (x.size() % 8) x.push_back(0.0f);
  const std::vector<float> y = exp_of(x);
  const double min_normal = std::numeric_limits<float>::min();
  const double max_float = std::numeric_limits<float>::max();
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    if (want > max_float * (1 + 1e-7)) {
      ASSERT_TRUE(std::isinf(y[i]) && y[i] > 0) << "exp(" << x[i] << ") = " << y[i];
    } else if (want >= min_normal) {
      worst = std::max(worst, ulps(y[i], want));
      ASSERT_LE(ulps(y[i], want), 2.0) << "exp(" << x[i] << ") = " << y[i] << ", want " << want;
    } else {  // denormal or zero: within two of the smallest denormal
      ASSERT_LE(std::fabs(y[i] - want), 2 * std::numeric_limits<float>::denorm_min())
          << "exp(" << x[i] << ")";
    }
  }
  RecordProperty("worst_ulps", std::to_string(worst));
}

TEST(CpuVecMath, ExpOfSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y = exp_of({0.0f, -0.0f, inf, -inf, nan, -1e30f, 1e30f, 88.72f});
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_TRUE(std::isinf(y[2]) && y[2] > 0);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_TRUE(std::isinf(y[6]) && y[6] > 0);
  EXPECT_TRUE(std::isfinite(y[7]));
}

// Lengths that reach the vector loop, the padded tail, and both.
TEST(CpuVecMath, SwigluMatchesReference) {
  for (int64_t inter : {1, 7, 8, 9, 16, 37}) {
    const int64_t rows = 3;
    std::vector<float> gu(rows * 2 * inter), out(rows * inter, -7.0f);
    for (std::size_t i = 0; i < gu.size(); ++i)
      gu[i] = static_cast<float>(std::sin(0.37 * i) * (i % 5 == 0 ? 40.0 : 4.0));
    cpu_swiglu(gu.data(), out.data(), rows, inter);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < inter; ++i) {
        const double g = gu[r * 2 * inter + i], u = gu[r * 2 * inter + inter + i];
        const double want = g / (1 + std::exp(-g)) * u;
        ASSERT_NEAR(out[r * inter + i], want, 1e-6 * std::max(1.0, std::fabs(want)))
            << "inter " << inter << " row " << r << " i " << i;
      }
  }
}

TEST(CpuVecMath, SoftmaxMatchesReference) {
  for (int64_t n : {1, 5, 8, 13, 64, 129}) {
    std::vector<float> row(n);
    for (int64_t i = 0; i < n; ++i) row[i] = static_cast<float>(std::cos(1.3 * i) * 12.0);
    std::vector<double> want(row.begin(), row.end());
    double mx = -1e300, sum = 0;
    for (double v : want) mx = std::max(mx, v);
    for (double& v : want) sum += (v = std::exp(v - mx));
    cpu_kernels::softmax_inplace(row.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(row[i], want[i] / sum, 1e-6 * std::max(1e-3, want[i] / sum))
          << "n " << n << " i " << i;
  }
}

}  // namespace
}  // namespace tpb
