// The CUDA launch plan (grids and per-kernel work from each kernel's own loop bounds) must
// sum to the cost model's step_cost(): what the GPU really launches is what MBU/MFU price.
// Host-only: runs without a GPU or nvcc.
#include <gtest/gtest.h>

#include <string>

#include "layers/base/errors.h"
#include "layers/cost_model.h"
#include "layers/cuda/plan/launch_plan.h"
#include "layers/cuda/plan/launch_plan_query.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

CostQuery query(const std::string& model, Phase phase, int64_t batch, int64_t n, int tp,
                DType t = DType::bf16) {
  CostQuery q;
  q.shape = load_model(model, kConfigs);
  q.phase = phase;
  q.batch = batch;
  (phase == Phase::decode ? q.context : q.prompt) = n;
  q.tp = tp;
  q.dtype = t;
  q.layers = 3;  // every layer is identical; 3 keeps the check cheap
  return q;
}

std::string describe(const CostQuery& q) {
  return q.shape.name + " " + phase_name(q.phase) + " B=" + std::to_string(q.batch) +
         " n=" + std::to_string(q.phase == Phase::decode ? q.context : q.prompt) +
         " tp=" + std::to_string(q.tp) + " " + dtype_name(q.dtype);
}

// Per op and per step: FLOPs, bytes read and bytes written agree exactly (the same products
// of small integers in doubles), and the collectives carry the same payload.
void expect_plan_matches_cost(const CostQuery& q) {
  SCOPED_TRACE(describe(q));
  const StepCost sc = step_cost(q);
  const std::vector<KernelLaunch> layer = layer_launch_plan(layer_dims(q));
  for (const OpCost& c : sc.layer_ops) {
    if (op_is_collective(c.op)) continue;
    KernelLaunch sum;
    int kernels = 0;
    for (const KernelLaunch& k : layer)
      if (k.op == c.op) {
        sum.flops += k.flops;
        sum.bytes_read += k.bytes_read;
        sum.bytes_written += k.bytes_written;
        ++kernels;
      }
    SCOPED_TRACE(op_name(c.op));
    EXPECT_GE(kernels, 1);
    EXPECT_DOUBLE_EQ(sum.flops, c.flops);
    EXPECT_DOUBLE_EQ(sum.bytes_read, c.bytes_read);
    EXPECT_DOUBLE_EQ(sum.bytes_written, c.bytes_written);
  }
  const PlanTotals t = plan_totals(step_launch_plan(q));
  EXPECT_DOUBLE_EQ(t.flops, sc.flops);
  EXPECT_DOUBLE_EQ(t.bytes_read, sc.bytes_read);
  EXPECT_DOUBLE_EQ(t.bytes_written, sc.bytes_written);
  EXPECT_DOUBLE_EQ(t.comm_bytes, sc.comm_bytes);
  std::size_t collectives = 0;
  for (const KernelLaunch& k : step_launch_plan(q)) collectives += op_is_collective(k.op) ? 1 : 0;
  EXPECT_EQ(collectives, sc.comm.size());
}

TEST(LaunchPlan, DecodeSumsToStepCost) {
  for (const char* model : {"llama-3.1-8b", "llama-3.1-70b", "tiny"})
    for (int tp : {1, 2, 8})
      for (int64_t batch : {1, 7, 64, 256})
        for (int64_t context : {0, 100, 1024, 8191})
          expect_plan_matches_cost(query(model, Phase::decode, batch, context, tp));
}

TEST(LaunchPlan, PrefillSumsToStepCost) {
  for (const char* model : {"llama-3.1-8b", "llama-3.1-70b", "tiny"})
    for (int tp : {1, 2, 8})
      for (int64_t batch : {1, 3})
        for (int64_t prompt : {1, 67, 512, 8192})
          expect_plan_matches_cost(query(model, Phase::prefill, batch, prompt, tp));
}

TEST(LaunchPlan, OtherDtypesAndReplicatedKvHeads) {
  expect_plan_matches_cost(query("llama-3.1-8b", Phase::decode, 4, 512, 2, DType::fp32));
  expect_plan_matches_cost(query("tiny", Phase::prefill, 2, 100, 1, DType::fp16));
  // tp=16 > 8 KV heads: each rank keeps one replicated KV head (shard_shape).
  expect_plan_matches_cost(query("llama-3.1-8b", Phase::decode, 8, 1024, 16));
  expect_plan_matches_cost(query("llama-3.1-8b", Phase::prefill, 1, 512, 16));
}

TEST(LaunchPlan, LayerLaunchOrderAndCount) {
  const std::vector<KernelLaunch> tp1 =
      layer_launch_plan(layer_dims(query("llama-3.1-8b", Phase::prefill, 1, 512, 1)));
  // 12 compute kernels (prefill attention is one kernel), no collectives at tp=1.
  ASSERT_EQ(tp1.size(), 12u);
  EXPECT_EQ(tp1.front().op, Op::rmsnorm_attn);
  EXPECT_EQ(tp1.back().op, Op::residual_mlp);
  const std::vector<KernelLaunch> tp2 =
      layer_launch_plan(layer_dims(query("llama-3.1-8b", Phase::prefill, 1, 512, 2)));
  ASSERT_EQ(tp2.size(), 14u);
  EXPECT_EQ(tp2[6].op, Op::allreduce_attn);  // right after o_proj
  EXPECT_EQ(tp2[12].op, Op::allreduce_mlp);  // right after down_proj
}

// Llama-3.1-8B at tp=1: 32 q heads, 8 KV heads (group 4), d = 128, 132 SMs.
TEST(LaunchPlan, DecodeSplitsPinned) {
  // B=1, ctx 1025: 8 (sequence, KV head) blocks; 2*132 = 264 wanted -> 33 splits ->
  // ceil(1025/33) = 32 positions, raised to the 64 minimum -> ceil(1025/64) = 17 splits.
  DecodePlan p = plan_attention_decode(1, 32, 8, 128, 1025, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 64);
  EXPECT_EQ(p.splits, 17);
  EXPECT_EQ(p.main.grid.x, 17);
  EXPECT_EQ(p.main.grid.y, 8);
  EXPECT_EQ(p.main.grid.z, 1);
  EXPECT_EQ(p.main.block.x, kDecodeThreads);
  // Shared memory: q 4*128 + scores 4*64 + stats 2*4 floats = 776 * 4 bytes.
  EXPECT_EQ(p.main.smem_bytes, 3104);
  EXPECT_STREQ(p.combine.kernel, "attention_decode_combine_kernel");
  EXPECT_EQ(p.combine.grid.x, 32);
  // Partials: 1 * 32 heads * 17 splits * (128 + 2) floats * 4 bytes = 282,880 bytes, written by
  // the main kernel and read by the combine kernel.
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 282'880.0);
  EXPECT_DOUBLE_EQ(p.main.scratch_bytes + p.combine.scratch_bytes, 2 * 282'880.0);

  // B=256: 2048 blocks already fill the GPU -> one split, chunk = ctx rounded up to 32.
  p = plan_attention_decode(256, 32, 8, 128, 1025, DType::bf16, 132);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.chunk, 1056);
  EXPECT_STREQ(p.combine.kernel, "");
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 0.0);

  // B=64, ctx 8193: 512 blocks -> 1 split wanted, but 8192 score floats / group 4 caps a
  // chunk at 2048 positions -> ceil(8193 / 2048) = 5 splits.
  p = plan_attention_decode(64, 32, 8, 128, 8193, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 2048);
  EXPECT_EQ(p.splits, 5);
}

TEST(LaunchPlan, SharedMemoryFitsEverySupportedShape) {
  // 99 KiB is the smallest opt-in limit among sm_80/sm_86/sm_89/sm_90 (sm_86/89).
  for (int64_t g : {1, 2, 4, 8, 16})
    for (int64_t d = 32; d <= 256; d += 32) {
      const DecodePlan p = plan_attention_decode(1, g, 1, d, 100000, DType::bf16, 132);
      EXPECT_LE(p.main.smem_bytes, 99 * 1024) << "g=" << g << " d=" << d;
    }
  for (int64_t d : {32, 64, 128, 256})
    EXPECT_LE(plan_attention_prefill(1, 8, 8, d, 4096, DType::bf16).smem_bytes, 99 * 1024);
}

TEST(LaunchPlan, PrefillGridPinned) {
  // S = 8192, 32 heads: 256 query tiles of 32 x 32 heads x 1 sequence; head_dim threads.
  const KernelLaunch k = plan_attention_prefill(1, 32, 8, 128, 8192, DType::bf16);
  EXPECT_EQ(k.grid.x, 256);
  EXPECT_EQ(k.grid.y, 32);
  EXPECT_EQ(k.block.x, 128);
  EXPECT_EQ(k.smem_bytes, 2 * 32 * 128 * 4);
  // Causal pairs 8192 * 8193 / 2 = 33,558,528, each 4 * 128 FLOPs, for 32 heads.
  EXPECT_DOUBLE_EQ(k.flops, 4.0 * 128 * 32 * 33'558'528.0);
}

TEST(LaunchPlan, ElementwiseGrids) {
  const KernelLaunch a = plan_add(1000, DType::bf16);
  EXPECT_EQ(a.grid.x, 4);  // ceil(1000 / 256)
  EXPECT_EQ(a.block.x, 256);
  EXPECT_DOUBLE_EQ(a.bytes_read, 4000.0);
  EXPECT_DOUBLE_EQ(a.bytes_written, 2000.0);
  // 3 tokens * (4 + 2) heads * 32 pairs = 576 threads -> 3 blocks.
  EXPECT_EQ(plan_rope(3, 4, 2, 64, DType::fp32).grid.x, 3);
  EXPECT_EQ(plan_rmsnorm(17, 4096, DType::bf16).grid.x, 17);  // one block per row
}

TEST(LaunchPlan, RejectsShapesTheKernelsCannotRun) {
  EXPECT_THROW(plan_attention_prefill(1, 8, 8, 96, 64, DType::bf16), BadInput);
  EXPECT_THROW(plan_attention_decode(1, 64, 2, 128, 64, DType::bf16, 132), BadInput);  // group 32
  EXPECT_THROW(plan_attention_decode(1, 8, 3, 128, 64, DType::bf16, 132), BadInput);
  EXPECT_THROW(plan_attention_decode(1, 8, 8, 80, 64, DType::bf16, 132), BadInput);
  EXPECT_THROW(plan_attention_decode(1, 8, 8, 128, 0, DType::bf16, 132), BadInput);
}

}  // namespace
}  // namespace tpb
