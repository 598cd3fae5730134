// --check's independent reference (layers/reference): the fp64 host step of the layer stack
// against TpModel on the CPU backend at tp = 1 (a small error, but not zero), and the check
// failing on what it exists to catch: a wrong seed, a shard without its all-reduce, a
// corrupted element, a wrong token. Tolerances and dtype roundings pinned by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collectives/self_collective.h"
#include "layers/cpu/cpu_device.h"
#include "layers/reference/dtype_round.h"
#include "layers/reference/ref_check.h"
#include "layers/reference/stack_reference.h"
#include "layers/reference/tolerance.h"
#include "tp_model/tp_model.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

// tiny's shapes (h 1024, 16/8 heads, I 4096, vocab 32000) over 2 layers, to keep it quick.
TpModelConfig tiny(Phase phase) {
  TpModelConfig c;
  c.shape = load_model("tiny", kConfigs);
  c.layers = 2;
  c.phase = phase;
  c.batch = 2;
  c.context = phase == Phase::decode ? 37 : 0;
  c.prompt = phase == Phase::decode ? 1 : 24;
  c.lm_head = true;
  return c;
}

struct Stepped {
  std::vector<float> x;
  std::vector<int32_t> ids;
};

// What run --check's sharded side does: a step from the seeded state. With tp > 1 this is one
// shard stepped alone, its all-reduces summing nothing.
Stepped step_on_cpu(const TpModelConfig& c) {
  CpuDevice dev(DeviceOptions{});
  TpModel m(dev, c);
  SelfCollective self;
  m.reset_state();
  m.step(self, nullptr, 0, nullptr);
  return {m.output(), m.sampled_ids()};
}

double rel_tol(const TpModelConfig& c) {
  return ref::relative_tolerance(c.dtype, c.shape, c.layers, false);
}

void expect_close_but_not_equal(Phase phase) {
  const TpModelConfig c = tiny(phase);
  const Stepped got = step_on_cpu(c);
  const ref::StackResult want = ref::reference_step(c, 0);
  const ref::ErrorCheck e = ref::compare_outputs(got.x, want.x, rel_tol(c));
  EXPECT_TRUE(e.passed) << e.max_abs_err << " > " << e.tolerance;
  // fp32 against fp64: a real comparison leaves rounding error; 0 would mean a self-comparison.
  EXPECT_GT(e.max_abs_err, 0.0);
  EXPECT_LT(e.max_abs_err, e.tolerance / 4) << "the fp32 error should sit well inside";
  EXPECT_GT(e.max_abs_ref, 1.0);
  const auto tol =
      ref::logit_tolerances(want, ref::expected_relative_error(c.dtype, c.shape, c.layers, true));
  const ref::TokenCheck t = ref::check_tokens(got.ids, want, tol);
  EXPECT_TRUE(t.match);
  ASSERT_EQ(got.ids.size(), 2u);
}

TEST(StackReference, MatchesTheCpuDecodeStepAtTp1) {
  expect_close_but_not_equal(Phase::decode);
}

TEST(StackReference, MatchesTheCpuPrefillStepAtTp1) {
  expect_close_but_not_equal(Phase::prefill);
}

TEST(StackReference, FailsOnAWrongSeedOrAShardAlone) {
  TpModelConfig c = tiny(Phase::decode);
  c.lm_head = false;
  const ref::StackResult want = ref::reference_step(c, 0);
  TpModelConfig other = c;
  other.seed += 1;
  const ref::ErrorCheck seed = ref::compare_outputs(step_on_cpu(other).x, want.x, rel_tol(c));
  EXPECT_FALSE(seed.passed);
  EXPECT_GT(seed.max_abs_err, 0.1 * seed.max_abs_ref);  // of the order of the output
  // Rank 0 of tp = 2 without its all-reduces: half of every projection's sum is missing.
  TpModelConfig shard = c;
  shard.tp = 2;
  const ref::ErrorCheck alone = ref::compare_outputs(step_on_cpu(shard).x, want.x, rel_tol(c));
  EXPECT_FALSE(alone.passed);
  EXPECT_GT(alone.max_abs_err, 100 * alone.tolerance);
}

TEST(StackReference, FailsOnOneCorruptedElementOrToken) {
  const TpModelConfig c = tiny(Phase::decode);
  Stepped got = step_on_cpu(c);
  const ref::StackResult want = ref::reference_step(c, 0);
  const ref::ErrorCheck ok = ref::compare_outputs(got.x, want.x, rel_tol(c));
  ASSERT_TRUE(ok.passed);
  got.x[1234] += static_cast<float>(2 * ok.tolerance);
  EXPECT_FALSE(ref::compare_outputs(got.x, want.x, rel_tol(c)).passed);
  got.x[1234] = NAN;
  EXPECT_TRUE(std::isinf(ref::compare_outputs(got.x, want.x, rel_tol(c)).max_abs_err));
  const auto tol =
      ref::logit_tolerances(want, ref::expected_relative_error(c.dtype, c.shape, c.layers, true));
  got.ids[1] = (got.ids[1] + 1) % static_cast<int32_t>(c.shape.vocab);
  EXPECT_FALSE(ref::check_tokens(got.ids, want, tol).match);
}

// A hand-made reference of one sequence, vocab 3: logits 2.0, 1.99, -1.
TEST(StackReference, OnlyANearTieMayFlip) {
  ref::StackResult r;
  r.vocab = 3;
  r.logits = {2.0, 1.99, -1.0};
  const std::vector<double> wide{0.05}, narrow{0.001};
  EXPECT_TRUE(ref::check_tokens({1}, r, wide).match);  // within the tolerance of the best
  EXPECT_EQ(ref::check_tokens({1}, r, wide).near_ties, 1);
  EXPECT_FALSE(ref::check_tokens({1}, r, narrow).match);
  EXPECT_FALSE(ref::check_tokens({2}, r, wide).match);
  EXPECT_FALSE(ref::check_tokens({7}, r, wide).match);  // outside the vocabulary
  EXPECT_TRUE(ref::check_tokens_agree({0}, {1}, r, wide).match);
  EXPECT_FALSE(ref::check_tokens_agree({0}, {1}, r, narrow).match);
  EXPECT_TRUE(ref::check_tokens_agree({0}, {0}, r, narrow).match);
}

// tolerance = 4 sqrt(B) (u + 2^-24 sqrt(k)).
//   tiny fp32, 8 layers: B = 16, k = 4096: 4 * 4 * 2^-24 * 65 = 1040 / 2^24 = 6.19888e-5.
//   8B bf16, 32 layers: B = 64, k = 14336: 4 * 8 * (2^-8 + 2^-24 * 119.733) = 0.125228.
TEST(StackReference, ToleranceByDtypeAndDepth) {
  const ModelShape t = load_model("tiny", kConfigs);
  const ModelShape b8 = load_model("llama-3.1-8b", kConfigs);
  EXPECT_DOUBLE_EQ(ref::relative_tolerance(DType::fp32, t, 8, false), 1040.0 / 16777216.0);
  EXPECT_NEAR(ref::relative_tolerance(DType::bf16, b8, 32, false), 0.125228, 1e-6);
  EXPECT_NEAR(ref::expected_relative_error(DType::fp32, t, 8, true),
              260.0 / 16777216.0 * std::sqrt(17.0 / 16.0), 1e-12);
  EXPECT_EQ(ref::tolerance_rule(DType::fp32, t, 8),
            "4 sqrt(B) (u + 2^-24 sqrt(k)) max|ref|: u = 2^-24 (fp32), B = 16 blocks, k = 4096; "
            "6.2e-05 of max|ref|");
}

// Round to nearest, ties to even, as __float2bfloat16_rn / __float2half_rn.
TEST(StackReference, DtypeRoundingTiesToEven) {
  using ref::round_to_dtype;
  EXPECT_EQ(round_to_dtype(1.0f + 0x1p-8f, DType::bf16), 1.0f);                // tie -> even
  EXPECT_EQ(round_to_dtype(1.0f + 3 * 0x1p-8f, DType::bf16), 1.0f + 0x1p-6f);  // tie -> even
  EXPECT_EQ(round_to_dtype(1.0f + 0x1p-8f + 0x1p-20f, DType::bf16), 1.0f + 0x1p-7f);
  EXPECT_EQ(round_to_dtype(-0.3f, DType::fp32), -0.3f);
  EXPECT_EQ(round_to_dtype(1.0f + 0x1p-11f, DType::fp16), 1.0f);
  EXPECT_EQ(round_to_dtype(65519.0f, DType::fp16), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_dtype(65520.0f, DType::fp16)));
  EXPECT_EQ(round_to_dtype(0x1p-25f, DType::fp16), 0.0f);  // half the least subnormal: tie -> 0
  EXPECT_EQ(round_to_dtype(3 * 0x1p-26f, DType::fp16), 0x1p-24f);
  EXPECT_THROW(ref::unit_roundoff(DType::fp8), BadInput);
}

}  // namespace
}  // namespace tpb
