// The NaN-aware error of the output checks (layers/reference/max_error.h): a NaN or an infinity
// anywhere in an op's output, or in its reference, is an infinite error, so the layer check
// (normalized_max_error against check_tolerance) and --check (compare_outputs) fail it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "layers/reference/max_error.h"
#include "layers/reference/ref_check.h"
#include "layers/reference/ref_ops.h"

namespace tpb::ref {
namespace {

constexpr double kBf16LayerTolerance = 1.5e-2;  // tests/gpu/layer_check.cc's widest

TEST(MaxError, AnAllNanOpOutputFailsTheLayerCheck) {
  const Vec want = {0.5f, -2.0f, 1.0f, 4.0f};
  const Vec nan(want.size(), std::numeric_limits<float>::quiet_NaN());
  const double e = normalized_max_error(nan, want);
  EXPECT_TRUE(std::isinf(e)) << e;  // std::max(0, NaN) kept 0: an all-NaN op read "ok"
  EXPECT_FALSE(e <= kBf16LayerTolerance);
}

TEST(MaxError, OneNanOrInfinityAmongGoodValuesFails) {
  const Vec want = {0.5f, -2.0f, 1.0f, 4.0f};
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY}) {
    Vec got = want;
    got[2] = bad;
    EXPECT_TRUE(std::isinf(normalized_max_error(got, want))) << bad;
    // The first element bad too: the running maximum must not restart from it.
    got[0] = bad;
    EXPECT_TRUE(std::isinf(normalized_max_error(got, want))) << bad;
  }
  // A broken reference is no pass either.
  Vec want_nan = want;
  want_nan[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isinf(normalized_max_error(want, want_nan)));
}

TEST(MaxError, FiniteOutputsKeepTheirError) {
  // max |got - want| = |4.25 - 4| = 0.25 over max |want| = 4: 0.0625.
  const Vec want = {0.5f, -2.0f, 1.0f, 4.0f}, got = {0.5f, -2.125f, 1.0f, 4.25f};
  EXPECT_DOUBLE_EQ(normalized_max_error(got, want), 0.0625);
  EXPECT_DOUBLE_EQ(worse_error(0.3, 1.0, 1.5), 0.5);
  EXPECT_DOUBLE_EQ(worse_error(0.7, 1.0, 1.5), 0.7);
  EXPECT_TRUE(std::isinf(worse_error(0.7, NAN, 1.5)));
  EXPECT_TRUE(std::isinf(worse_error(INFINITY, 1.0, 1.0)));  // once infinite, stays so
}

TEST(MaxError, CheckFailsANanStepThroughTheSameHelper) {
  const std::vector<double> want = {1.0, -3.0};
  const ErrorCheck c = compare_outputs(std::vector<float>{NAN, NAN}, want, 1e-2);
  EXPECT_TRUE(std::isinf(c.max_abs_err));
  EXPECT_FALSE(c.passed);
}

}  // namespace
}  // namespace tpb::ref
