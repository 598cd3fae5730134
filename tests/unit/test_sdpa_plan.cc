// --attention cudnn's plan (layers/cuda/plan/sdpa_plan.h): cuDNN's fused SDPA is one launch
// whose work is the cost model's attention op, and its tensors are tpbench's own buffers seen
// as [B, H, S, D] with strides. Host-only: what a GPU run of it must agree with.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "base/errors.h"
#include "layers/cost_model.h"
#include "layers/cuda/plan/launch_plan_query.h"
#include "layers/cuda/plan/sdpa_plan.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

CostQuery query(Phase phase, int64_t batch, int64_t n, int tp, DType t = DType::bf16) {
  CostQuery q;
  q.shape = load_model("llama-3.1-8b", kConfigs);
  q.phase = phase;
  q.batch = batch;
  (phase == Phase::decode ? q.context : q.prompt) = n;
  q.tp = tp;
  q.dtype = t;
  q.layers = 1;
  return q;
}

LayerDims cudnn_dims(const CostQuery& q, bool fused) {
  LayerDims d = layer_dims(q);
  d.attention = AttnImpl::cudnn;
  d.max_ctx = d.ctx_len + 7;  // a cache longer than the step reads
  d.fused = fused;
  return d;
}

const OpCost& attention_cost(const StepCost& sc) {
  for (const OpCost& c : sc.layer_ops)
    if (c.op == Op::attention) return c;
  throw std::logic_error("no attention op");
}

TEST(SdpaPlan, OneLaunchDoingTheCostModelsAttention) {
  for (Phase phase : {Phase::decode, Phase::prefill})
    for (int tp : {1, 2, 8})
      for (int64_t batch : {1, 3, 64})
        for (int64_t n : {1, 100, 1024}) {
          const CostQuery q = query(phase, batch, n, tp);
          SCOPED_TRACE(std::string(phase_name(phase)) + " tp " + std::to_string(tp) + " B " +
                       std::to_string(batch) + " n " + std::to_string(n));
          int launches = 0;
          for (const KernelLaunch& k : layer_launch_plan(cudnn_dims(q, false))) {
            if (k.op != Op::attention) continue;
            ++launches;
            const StepCost cost = step_cost(q);  // c refers into it
            const OpCost& c = attention_cost(cost);
            EXPECT_STREQ(k.kernel, "cudnn_sdpa_fprop");
            EXPECT_DOUBLE_EQ(k.flops, c.flops);
            EXPECT_DOUBLE_EQ(k.bytes_read, c.bytes_read);
            EXPECT_DOUBLE_EQ(k.bytes_written, c.bytes_written);
            EXPECT_EQ(k.scratch_bytes, 0);
          }
          EXPECT_EQ(launches, 1);
        }
}

// Issue 30's target: at most 9 kernels a layer at TP 1. The fused step with cuDNN's attention
// has 9 (the native decode attention adds its split-K combine).
TEST(SdpaPlan, NineKernelsALayerAtTp1) {
  const CostQuery q = query(Phase::decode, 1, 1024, 1);
  EXPECT_EQ(plan_totals(layer_launch_plan(cudnn_dims(q, true))).launches, 9);
  LayerDims native = layer_dims(q);
  native.fused = true;
  EXPECT_EQ(plan_totals(layer_launch_plan(native)).launches, 10);
}

TEST(SdpaPlan, Fp32KeepsTheNativeKernels) {
  EXPECT_FALSE(sdpa_runs(AttnImpl::cudnn, DType::fp32));
  EXPECT_TRUE(sdpa_runs(AttnImpl::cudnn, DType::bf16));
  EXPECT_TRUE(sdpa_runs(AttnImpl::cudnn, DType::fp16));
  EXPECT_FALSE(sdpa_runs(AttnImpl::native, DType::bf16));
  const CostQuery q = query(Phase::prefill, 1, 512, 1, DType::fp32);
  int attention = 0;
  for (const KernelLaunch& k : layer_launch_plan(cudnn_dims(q, false)))
    if (k.op == Op::attention) {
      ++attention;
      EXPECT_STRNE(k.kernel, "cudnn_sdpa_fprop");
    }
  EXPECT_EQ(attention, 3);  // QK^T, softmax, PV
}

// Llama-3.1-8B at TP 1: 32 query heads, 8 KV heads, head_dim 128; qkv rows 6144 wide.
TEST(SdpaPlan, ViewsOfTheQkvRowsTheCachesAndTheOutput) {
  const SdpaLayout p = sdpa_prefill_layout(2, 32, 8, 128, 4096, 512);
  EXPECT_TRUE(p.causal);
  EXPECT_FLOAT_EQ(p.scale, 1.0f / std::sqrt(128.0f));
  EXPECT_EQ(p.q.dim, (std::array<int64_t, 4>{2, 32, 512, 128}));
  EXPECT_EQ(p.q.stride, (std::array<int64_t, 4>{512 * 6144, 128, 6144, 1}));
  EXPECT_EQ(p.k.dim, (std::array<int64_t, 4>{2, 8, 512, 128}));
  EXPECT_EQ(p.k.stride, (std::array<int64_t, 4>{4096 * 1024, 128, 1024, 1}));
  EXPECT_EQ(p.v.stride, p.k.stride);
  EXPECT_EQ(p.o.dim, (std::array<int64_t, 4>{2, 32, 512, 128}));
  EXPECT_EQ(p.o.stride, (std::array<int64_t, 4>{512 * 4096, 128, 4096, 1}));

  const SdpaLayout d = sdpa_decode_layout(64, 32, 8, 128, 2048, 1025);
  EXPECT_FALSE(d.causal);
  EXPECT_EQ(d.q.dim, (std::array<int64_t, 4>{64, 32, 1, 128}));
  EXPECT_EQ(d.q.stride, (std::array<int64_t, 4>{6144, 128, 6144, 1}));
  EXPECT_EQ(d.k.dim, (std::array<int64_t, 4>{64, 8, 1025, 128}));
  EXPECT_EQ(d.k.stride, (std::array<int64_t, 4>{2048 * 1024, 128, 1024, 1}));
  EXPECT_EQ(d.o.stride, (std::array<int64_t, 4>{4096, 128, 4096, 1}));
}

TEST(SdpaPlan, BadShapesAndNamesAreRefusedByName) {
  EXPECT_THROW(sdpa_decode_layout(1, 30, 8, 128, 1024, 10), BadInput);    // 30 % 8
  EXPECT_THROW(sdpa_decode_layout(1, 32, 8, 128, 1024, 1025), BadInput);  // past the cache
  EXPECT_EQ(parse_attn_impl("cudnn", "--attention"), AttnImpl::cudnn);
  EXPECT_STREQ(attn_impl_name(AttnImpl::native), "native");
  try {
    (void)parse_attn_impl("flash", "--attention");
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("--attention: expected native or cudnn"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace tpb
