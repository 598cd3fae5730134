// Kernels per op from the CUDA launch plan (the model backend's fixed cost per kernel counts
// them) and the profile's achievable fractions (issue 32, items 2 and 4).
#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "layers/cuda/plan/launch_plan_query.h"
#include "layers/hardware.h"
#include "layers/profile/achievable.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

CostQuery decode_8b(int64_t batch) {
  CostQuery q;
  q.shape = load_model("llama-3.1-8b", kConfigs);
  q.batch = batch;
  q.context = 1024;
  q.dtype = DType::bf16;
  q.layers = 3;
  return q;
}

double at(const std::array<double, static_cast<std::size_t>(Op::count)>& n, Op op) {
  return n[static_cast<std::size_t>(op)];
}

// TpModel's fused step on CudaDevice (tp_model/tp_model.cc): per layer add_rmsnorm, the QKV GEMM,
// rope_kv_write, split-K attention and its combine (B=1: 33 splits of 32 positions), the O GEMM,
// add_rmsnorm, gate_up, swiglu, down = 10; then the last layer's residual add: 3 x 10 + 1.
TEST(KernelCounts, FusedDecodeStepAsCudaDeviceLaunchesIt) {
  const CostQuery q = decode_8b(1);
  const auto step = step_launch_plan(q, kDefaultSmCount, true);
  EXPECT_EQ(plan_totals(step).launches, 31);
  const auto n = kernels_per_layer_op(q, true);
  EXPECT_DOUBLE_EQ(at(n, Op::attention), 2);
  EXPECT_DOUBLE_EQ(at(n, Op::rope), 1);
  EXPECT_DOUBLE_EQ(at(n, Op::kv_write), 0);
  EXPECT_DOUBLE_EQ(at(n, Op::residual_attn), 0);
  EXPECT_DOUBLE_EQ(at(n, Op::residual_mlp), 1.0 / 3);
  EXPECT_DOUBLE_EQ(at(n, Op::allreduce_attn), 0);  // collectives are the fabric's to price
}

// Unfused (--stamps ops): one kernel per op (12 compute ops) plus the combine, every layer.
TEST(KernelCounts, UnfusedDecodeStepHasOneKernelPerOp) {
  const CostQuery q = decode_8b(1);
  EXPECT_EQ(plan_totals(step_launch_plan(q)).launches, 3 * 13);
  EXPECT_DOUBLE_EQ(at(kernels_per_layer_op(q, false), Op::residual_mlp), 1);
}

// B=256: 256 x 8 KV heads = 2048 blocks already fill 4 per SM, so one split and no combine.
TEST(KernelCounts, LargeBatchDecodeNeedsNoCombine) {
  EXPECT_DOUBLE_EQ(at(kernels_per_layer_op(decode_8b(256), true), Op::attention), 1);
}

// Linear in log2(x): 2048 sits halfway (in log2) between 512 and 8192.
TEST(Achievable, CurveInterpolatesInLog2AndHoldsItsEnds) {
  FractionCurve c;
  c.points = {{512, 0.736}, {8192, 0.81}};
  EXPECT_DOUBLE_EQ(c.at(2048), 0.736 + (0.81 - 0.736) * 0.5);
  EXPECT_DOUBLE_EQ(c.at(1), 0.736);
  EXPECT_DOUBLE_EQ(c.at(1e6), 0.81);
  EXPECT_DOUBLE_EQ(FractionCurve{}.at(100), 1.0);
}

TEST(Achievable, EveryFigureNeedsItsSource) {
  const auto j = nlohmann::json::parse(R"({"hbm_stream": {"points": [[1e8, 0.8]]}})");
  EXPECT_THROW(achievable_from_json(j, "x"), BadInput);
  const auto k = nlohmann::json::parse(R"({"kernel_overhead": {"eager_s": 1e-6}})");
  EXPECT_THROW(achievable_from_json(k, "x"), BadInput);
}

// The shipped GPU profiles load, round-trip, and NAME:datasheet drops every fraction and cost.
TEST(Achievable, DatasheetVariantIsTheBareRoofline) {
  for (const char* name : {"h200-sxm", "h100-sxm", "a100-sxm-80g", "b200"}) {
    SCOPED_TRACE(name);
    const Hardware h = load_hardware(name, kConfigs);
    EXPECT_FALSE(h.achievable.empty());
    const Hardware back = hardware_from_json(hardware_to_json(h), name);
    EXPECT_EQ(achievable_to_json(back.achievable), achievable_to_json(h.achievable));
    const Hardware d = load_hardware(std::string(name) + kDatasheetSuffix, kConfigs);
    EXPECT_TRUE(d.achievable.empty());
    EXPECT_EQ(d.peak_bw, h.peak_bw);
    EXPECT_EQ(d.name, std::string(name) + ":datasheet");
  }
}

}  // namespace
}  // namespace tpb
