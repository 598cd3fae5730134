// The CUDA launch plan (grids and per-kernel work from each kernel's own loop bounds) must
// sum to the cost model's step_cost(): what the GPU really launches is what MBU/MFU price.
// Host-only: runs without a GPU or nvcc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "base/errors.h"
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
  // 12 compute ops, prefill attention as three records (QK^T, softmax, PV); no collectives.
  ASSERT_EQ(tp1.size(), 14u);
  EXPECT_EQ(tp1.front().op, Op::rmsnorm_attn);
  EXPECT_EQ(tp1.back().op, Op::residual_mlp);
  const std::vector<KernelLaunch> tp2 =
      layer_launch_plan(layer_dims(query("llama-3.1-8b", Phase::prefill, 1, 512, 2)));
  ASSERT_EQ(tp2.size(), tp1.size() + 2);
  int reductions = 0;
  for (std::size_t i = 1; i < tp2.size(); ++i) {
    if (tp2[i].op == Op::allreduce_attn) EXPECT_EQ(tp2[i - 1].op, Op::o_proj);
    if (tp2[i].op == Op::allreduce_mlp) EXPECT_EQ(tp2[i - 1].op, Op::down_proj);
    reductions += op_is_collective(tp2[i].op) ? 1 : 0;
  }
  EXPECT_EQ(reductions, 2);
}

// Llama-3.1-8B at tp=1: 32 q heads, 8 KV heads (group 4), d = 128, 132 SMs, so the split
// count aims at 4 * 132 = 528 blocks.
TEST(LaunchPlan, DecodeSplitsPinned) {
  // B=1, ctx 1025: 8 (sequence, KV head) blocks -> ceil(528 / 8) = 66 splits wanted ->
  // ceil(1025 / 66) = 16 positions, raised to the 32 minimum -> ceil(1025 / 32) = 33 splits.
  DecodePlan p = plan_attention_decode(1, 32, 8, 128, 1025, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 32);
  EXPECT_EQ(p.splits, 33);
  EXPECT_EQ(p.main.grid.x, 33);
  EXPECT_EQ(p.main.grid.y, 8);
  EXPECT_EQ(p.main.grid.z, 1);
  EXPECT_EQ(p.main.block.x, kDecodeThreads);
  // Shared memory: q 4*128 + scores 4*32 + stats 2*4 floats = 648 * 4 bytes.
  EXPECT_EQ(p.main.smem_bytes, 2592);
  EXPECT_STREQ(p.combine.kernel, "attention_combine_kernel");
  EXPECT_EQ(p.combine.grid.x, 32);
  // Partials: 1 * 32 heads * 33 splits * (128 + 2) floats * 4 bytes = 549,120 bytes, written by
  // the main kernel and read by the combine kernel.
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 549'120.0);
  EXPECT_DOUBLE_EQ(p.main.scratch_bytes + p.combine.scratch_bytes, 2 * 549'120.0);

  // B=8, ctx 1025: 64 blocks -> 9 splits wanted -> ceil(1025 / 9) = 114 -> 128 positions
  // (a multiple of 32) -> ceil(1025 / 128) = 9 splits.
  p = plan_attention_decode(8, 32, 8, 128, 1025, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 128);
  EXPECT_EQ(p.splits, 9);

  // B=256: 2048 blocks already fill the GPU -> one split, chunk = ctx rounded up to 32.
  p = plan_attention_decode(256, 32, 8, 128, 1025, DType::bf16, 132);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.chunk, 1056);
  EXPECT_STREQ(p.combine.kernel, "");
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 0.0);

  // B=64, ctx 8193: 512 blocks -> ceil(528 / 512) = 2 splits wanted (4128 positions), but 8192
  // score floats / group 4 cap a chunk at 2048 positions -> ceil(8193 / 2048) = 5 splits.
  p = plan_attention_decode(64, 32, 8, 128, 8193, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 2048);
  EXPECT_EQ(p.splits, 5);
}

TEST(LaunchPlan, DecodeSplitsAtContext32k) {
  // B=1, ctx 32769 (32k cached + the new token): 66 splits wanted -> ceil(32769 / 66) = 497 ->
  // 512 positions -> 65 splits (the last holds one position): 65 * 8 = 520 blocks, ~4 per SM.
  DecodePlan p = plan_attention_decode(1, 32, 8, 128, 32769, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 512);
  EXPECT_EQ(p.splits, 65);
  EXPECT_EQ(p.main.grid.x * p.main.grid.y * p.main.grid.z, 520);
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 32.0 * 65 * 130 * 4);  // 1,081,600 bytes
  // B=256: one split is wanted, but the shared-memory cap of 2048 positions gives 17 splits
  // (34,816 blocks); partials 256 * 32 * 17 * 130 * 4 = 72,417,280 bytes (the step reserve
  // holds them): a block writes 4 * 130 * 4 = 2,080 bytes against 2048 * 512 = 1 MiB of K/V.
  p = plan_attention_decode(256, 32, 8, 128, 32769, DType::bf16, 132);
  EXPECT_EQ(p.chunk, 2048);
  EXPECT_EQ(p.splits, 17);
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 72'417'280.0);
  // The plan's K/V bytes stay the cost model's: 2 * B * ctx * kv_heads * d * 2 bytes + q.
  EXPECT_DOUBLE_EQ(p.main.bytes_read, 256.0 * 32 * 128 * 2 + 2.0 * 256 * 32769 * 8 * 128 * 2);
}

TEST(LaunchPlan, SharedMemoryFitsEverySupportedShape) {
  // 99 KiB is the smallest opt-in limit among sm_80/sm_86/sm_89/sm_90 (sm_86/89).
  for (int64_t g : {1, 2, 4, 8, 16})
    for (int64_t d = 32; d <= 256; d += 32) {
      const DecodePlan p = plan_attention_decode(1, g, 1, d, 100000, DType::bf16, 132);
      EXPECT_LE(p.main.smem_bytes, 99 * 1024) << "g=" << g << " d=" << d;
    }
}

// Llama-3.1-8B at tp=1, S = 8192: group 4 < 8 KV heads, so a GEMM batches one head of each
// group (8 heads, K/V stride d) and 4 GEMMs cover the 32 heads. All 32 heads' fp32 scores for
// 256 queries x 8192 keys are 32 * 256 * 8192 * 4 = 256 MiB: the bound exactly, one pass.
TEST(LaunchPlan, PrefillTilesPinned) {
  const PrefillPlan p = plan_attention_prefill(1, 32, 8, 128, 8192, DType::bf16);
  EXPECT_FALSE(p.batch_over_group);
  EXPECT_EQ(p.gemm_batch, 8);
  EXPECT_EQ(p.query_tile, 256);
  EXPECT_EQ(p.tiles, 32);
  EXPECT_EQ(p.heads_per_pass, 32);
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 268'435'456.0);
  // Per tile: 4 QK^T GEMMs, one softmax over 256 rows x 32 heads, 4 PV GEMMs.
  EXPECT_EQ(p.scores.launches, 128);
  EXPECT_EQ(p.softmax.launches, 32);
  EXPECT_EQ(p.values.launches, 128);
  EXPECT_EQ(p.softmax.grid.x, 256);
  EXPECT_EQ(p.softmax.grid.y, 32);
  EXPECT_EQ(p.softmax.block.x, kPrefillSoftmaxThreads);
  EXPECT_EQ(p.scores.grid.x, 0);  // cuBLAS's own grid
  // Causal pairs 8192 * 8193 / 2 = 33,558,528, each 2 * 128 FLOPs per GEMM, for 32 heads.
  EXPECT_DOUBLE_EQ(p.scores.flops, 2.0 * 128 * 32 * 33'558'528.0);
  EXPECT_DOUBLE_EQ(p.values.flops, p.scores.flops);
  // Computed pairs: tile t (256 rows, keys 256(t+1)) -> 256 * 256 * (1 + ... + 32) =
  // 34,603,008; the excess 1,044,480 = 32 tiles * 256 * 255 / 2 (each tile's masked triangle),
  // 3.1% more matmul work than the causal count.
  EXPECT_DOUBLE_EQ(p.scores.wasted_flops, 2.0 * 128 * 32 * 1'044'480.0);
  EXPECT_DOUBLE_EQ(p.values.wasted_flops, p.scores.wasted_flops);
  // Workspace traffic: fp32 scores written (4 B a computed pair), the softmax reads the causal
  // ones and writes bf16 P over them (2 B a computed pair), the PV GEMMs read P.
  EXPECT_DOUBLE_EQ(p.scores.scratch_bytes, 34'603'008.0 * 32 * 4);
  EXPECT_DOUBLE_EQ(p.softmax.scratch_bytes, 33'558'528.0 * 32 * 4 + 34'603'008.0 * 32 * 2);
  EXPECT_DOUBLE_EQ(p.values.scratch_bytes, 34'603'008.0 * 32 * 2);
  // DRAM-ideal bytes as the cost model counts them: Q and K, then V and the output.
  const double row = 8192.0 * 128 * 2;  // one head of every token
  EXPECT_DOUBLE_EQ(p.scores.bytes_read, row * (32 + 8));
  EXPECT_DOUBLE_EQ(p.values.bytes_read, row * 8);
  EXPECT_DOUBLE_EQ(p.values.bytes_written, row * 32);
  EXPECT_DOUBLE_EQ(p.softmax.bytes_read + p.softmax.bytes_written + p.softmax.flops, 0.0);
}

TEST(LaunchPlan, PrefillTileShrinksToTheWorkspaceBound) {
  // S = 32768: all heads at 256 queries would be 1 GiB; one GEMM batch (8 heads) is 256 MiB,
  // so 4 passes a tile, each with its own softmax.
  PrefillPlan p = plan_attention_prefill(1, 32, 8, 128, 32768, DType::bf16);
  EXPECT_EQ(p.query_tile, 256);
  EXPECT_EQ(p.heads_per_pass, 8);
  EXPECT_EQ(p.tiles, 128);
  EXPECT_EQ(p.softmax.launches, 128 * 4);
  // S = 131072: 8 heads need 512 MiB at 128 queries, 256 MiB at 64.
  p = plan_attention_prefill(1, 32, 8, 128, 131072, DType::bf16);
  EXPECT_EQ(p.query_tile, 64);
  EXPECT_EQ(p.heads_per_pass, 8);
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 8.0 * 64 * 131072 * 4);
  // Llama-3.1-70B at tp=8: 8 heads on one KV head -> one GEMM of the whole group (K/V stride 0).
  p = plan_attention_prefill(2, 8, 1, 128, 4096, DType::bf16);
  EXPECT_TRUE(p.batch_over_group);
  EXPECT_EQ(p.gemm_batch, 8);
  EXPECT_EQ(p.scores.launches, 2 * 16);  // 2 sequences x 16 tiles x 1 GEMM
  // A prompt shorter than a tile: one tile of 67 rows over ld 72 keys.
  p = plan_attention_prefill(1, 4, 2, 64, 67, DType::fp32);
  EXPECT_EQ(p.tiles, 1);
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 4.0 * 67 * 72 * 4);
  EXPECT_DOUBLE_EQ(p.scores.wasted_flops, 2.0 * 64 * 4 * (67.0 * 67 - 67.0 * 68 / 2));
  // Past what 16 queries of one GEMM batch can hold (8 * 16 * 600000 * 4 > 256 MiB): refused.
  EXPECT_THROW(plan_attention_prefill(1, 32, 8, 128, 600'000, DType::bf16), BadInput);
}

// Whatever the shape, every tile's scores fit the workspace and the workspace the bound, and
// flops + wasted_flops is what the tiles compute: rows x q1 pairs each.
TEST(LaunchPlan, PrefillWorkspaceBoundAndExtraWork) {
  for (int64_t hq : {4, 32, 64})
    for (int64_t hkv : {1, 4})
      for (int64_t seq : {1, 15, 256, 257, 1000, 8192, 65536}) {
        SCOPED_TRACE("hq=" + std::to_string(hq) + " hkv=" + std::to_string(hkv) +
                     " S=" + std::to_string(seq));
        const PrefillPlan p = plan_attention_prefill(3, hq, hkv, 128, seq, DType::fp16);
        EXPECT_LE(p.workspace_bytes, kPrefillScoreBytes);
        EXPECT_EQ(p.tiles, (seq + p.query_tile - 1) / p.query_tile);
        EXPECT_EQ(hq % p.heads_per_pass, 0);
        EXPECT_EQ(p.heads_per_pass % p.gemm_batch, 0);
        double computed = 0;
        for (int64_t q0 = 0; q0 < seq; q0 += p.query_tile) {
          const int64_t q1 = std::min(seq, q0 + p.query_tile);
          EXPECT_LE(4.0 * p.heads_per_pass * (q1 - q0) * prefill_score_ld(q1), p.workspace_bytes);
          computed += static_cast<double>(q1 - q0) * q1;
        }
        EXPECT_DOUBLE_EQ(p.scores.flops + p.scores.wasted_flops, 2.0 * 128 * 3 * hq * computed);
        EXPECT_EQ(p.scores.launches, 3 * p.tiles * (hq / p.gemm_batch));
      }
}

// One thread per 16-byte chunk: 8 bf16/fp16 or 4 fp32 elements, the last chunk of a row
// possibly partial; 256 threads a block.
TEST(LaunchPlan, ElementwiseGrids) {
  const KernelLaunch a = plan_add(1000, DType::bf16);
  EXPECT_EQ(a.grid.x, 1);  // ceil(1000 / 8) = 125 chunks
  EXPECT_EQ(a.block.x, 256);
  EXPECT_DOUBLE_EQ(a.bytes_read, 4000.0);
  EXPECT_DOUBLE_EQ(a.bytes_written, 2000.0);
  EXPECT_EQ(plan_add(4096 * 4096, DType::bf16).grid.x, 8192);  // 2,097,152 chunks
  EXPECT_EQ(plan_add(1001, DType::fp32).grid.x, 1);            // 251 chunks, the last of 1
  // Rope: 512 tokens * (32 + 8) heads * (64 / 8) chunks of a half-head = 163,840 -> 640 blocks;
  // head_dim 20 bf16: a half of 10 is 2 chunks (8 + 2) -> 3 * 6 * 2 = 36 threads.
  EXPECT_EQ(plan_rope(512, 32, 8, 128, DType::bf16).grid.x, 640);
  EXPECT_EQ(plan_rope(3, 4, 2, 20, DType::bf16).grid.x, 1);
  EXPECT_DOUBLE_EQ(plan_rope(3, 4, 2, 20, DType::bf16).bytes_read, 3 * 6 * 20 * 2.0);
  // kv_write: 512 tokens * (8 * 128 / 8) chunks = 65,536 -> 256 blocks.
  EXPECT_EQ(plan_kv_write(512, 8, 128, DType::bf16).grid.x, 256);
  // swiglu: 512 rows * (14336 / 8) = 917,504 -> 3584 blocks.
  EXPECT_EQ(plan_swiglu(512, 14336, DType::bf16).grid.x, 3584);
}

// RMSNorm threads per row: from 32, doubled while a thread would hold more than 4 chunks,
// at most 512; a warp per row puts 8 rows in a block.
TEST(LaunchPlan, RmsnormGrids) {
  struct Case {
    int64_t rows, dim;
    DType t;
    int64_t grid, block_x, block_y;
  };
  for (const Case& c : {
           Case{1, 4096, DType::bf16, 1, 128, 1},        // 512 chunks / 4 = 128: B=1 decode
           Case{4096, 4096, DType::bf16, 4096, 128, 1},  // prefill: a block per row
           Case{1, 8192, DType::bf16, 1, 256, 1},        // 1024 chunks
           Case{17, 4096, DType::fp32, 17, 256, 1},      // 1024 chunks of 4 fp32
           Case{4096, 512, DType::bf16, 512, 32, 8},     // 64 chunks <= 128: a warp per row
           Case{3, 100, DType::fp32, 1, 32, 8},          // 25 chunks, the last of 4 elements
           Case{2, 65536, DType::bf16, 2, 512, 1},       // 8192 chunks: capped, 2048 held per row
       }) {
    SCOPED_TRACE(std::to_string(c.rows) + " x " + std::to_string(c.dim));
    for (const KernelLaunch& k :
         {plan_rmsnorm(c.rows, c.dim, c.t), plan_add_rmsnorm(c.rows, c.dim, c.t)}) {
      EXPECT_EQ(k.grid.x, c.grid);
      EXPECT_EQ(k.block.x, c.block_x);
      EXPECT_EQ(k.block.y, c.block_y);
    }
  }
}

// The fused pairs against the sum of their two unfused plans: the same writes, fewer reads.
TEST(LaunchPlan, FusedPlansSaveOneRead) {
  for (DType t : {DType::fp32, DType::bf16, DType::fp16})
    for (int64_t rows : {1, 7, 4096})
      for (int64_t dim : {512, 4096, 4100}) {
        // add_rmsnorm keeps x + y in registers for the norm: x is read once instead of twice.
        const KernelLaunch f = plan_add_rmsnorm(rows, dim, t);
        const KernelLaunch a = plan_add(rows * dim, t), n = plan_rmsnorm(rows, dim, t);
        const double x_bytes = static_cast<double>(rows) * dim * dtype_bytes(t);
        EXPECT_DOUBLE_EQ(f.bytes_read, a.bytes_read + n.bytes_read - x_bytes);
        EXPECT_DOUBLE_EQ(f.bytes_written, a.bytes_written + n.bytes_written);
        EXPECT_DOUBLE_EQ(f.flops, 0.0);
      }
  for (DType t : {DType::fp32, DType::bf16})
    for (int64_t tokens : {1, 64, 4096})
      for (const auto& [q, kv, d] :
           {std::tuple{32, 8, 128}, std::tuple{8, 1, 128}, std::tuple{4, 2, 20}}) {
        // rope_kv_write caches k from the registers it rotated in: k is read once instead of
        // twice (rope's read, kv_write's read of the rotated k). v is read once either way.
        const KernelLaunch f = plan_rope_kv_write(tokens, q, kv, d, t);
        const KernelLaunch r = plan_rope(tokens, q, kv, d, t), w = plan_kv_write(tokens, kv, d, t);
        const double k_bytes = static_cast<double>(tokens) * kv * d * dtype_bytes(t);
        EXPECT_DOUBLE_EQ(f.bytes_read, r.bytes_read + w.bytes_read - k_bytes);
        EXPECT_DOUBLE_EQ(f.bytes_written, r.bytes_written + w.bytes_written);
      }
  // Llama-3.1-8B, B=1 decode, tp=1, bf16 (hidden 4096; 32 q, 8 KV heads of 128):
  // add 16,384 + rmsnorm (4096 + 4096) * 2 = 16,384 bytes read -> fused 24,576 (x's 8,192
  // saved); rope 2 * 40 * 64 * 2 = 10,240 + kv_write 2 * 1024 * 2 = 4,096 -> fused the qkv row,
  // 48 * 128 * 2 = 12,288 (k's 2,048 saved); writes 14,336 both ways.
  EXPECT_DOUBLE_EQ(plan_add_rmsnorm(1, 4096, DType::bf16).bytes_read, 24'576.0);
  EXPECT_DOUBLE_EQ(plan_add_rmsnorm(1, 4096, DType::bf16).bytes_written, 16'384.0);
  const KernelLaunch rk = plan_rope_kv_write(1, 32, 8, 128, DType::bf16);
  EXPECT_DOUBLE_EQ(rk.bytes_read, 12'288.0);
  EXPECT_DOUBLE_EQ(rk.bytes_written, 14'336.0);
  // 48 heads * 8 chunks = 384 threads -> 2 blocks, one launch (unfused: 2 + 1 blocks, two).
  EXPECT_EQ(rk.grid.x, 2);
  EXPECT_STREQ(rk.kernel, "rope_kv_write_kernel");
  EXPECT_THROW(plan_rope_kv_write(1, 4, 2, 7, DType::bf16), BadInput);  // odd head_dim
}

TEST(LaunchPlan, RejectsShapesTheKernelsCannotRun) {
  EXPECT_THROW(plan_attention_prefill(1, 8, 8, 100, 64, DType::bf16), BadInput);  // 200-byte rows
  EXPECT_NO_THROW(plan_attention_prefill(1, 8, 8, 96, 64, DType::bf16));  // cuBLAS takes any
  EXPECT_THROW(plan_attention_decode(1, 64, 2, 128, 64, DType::bf16, 132), BadInput);  // group 32
  EXPECT_THROW(plan_attention_decode(1, 8, 3, 128, 64, DType::bf16, 132), BadInput);
  EXPECT_THROW(plan_attention_decode(1, 8, 8, 80, 64, DType::bf16, 132), BadInput);
  EXPECT_THROW(plan_attention_decode(1, 8, 8, 128, 0, DType::bf16, 132), BadInput);
}

// An FP8 GEMM's three launches (maximum, quantisation, matmul) carry the cost model's GEMM at
// fp8 weights exactly (x read at bf16, the weights at one byte, y written at bf16); what they
// add (the second read of x, the e4m3 copy written and read back) is scratch.
TEST(LaunchPlan, Fp8GemmCarriesTheCostModelsGemm) {
  for (Phase phase : {Phase::decode, Phase::prefill})
    for (int tp : {1, 2}) {
      const CostQuery q = query("llama-3.1-8b", phase, phase == Phase::decode ? 64 : 1,
                                phase == Phase::decode ? 1024 : 512, tp, DType::fp8);
      const LayerDims d = layer_dims(q);
      const int64_t T = d.batch * d.tokens_per_seq, qkv = (d.q_heads + 2 * d.kv_heads) * d.head_dim;
      const std::tuple<Op, int64_t, int64_t> gemms[] = {
          {Op::qkv_proj, qkv, d.hidden},
          {Op::o_proj, d.hidden, d.q_heads * d.head_dim},
          {Op::gate_up_proj, 2 * d.inter, d.hidden},
          {Op::down_proj, d.hidden, d.inter}};
      for (const auto& [op, n, k] : gemms) {
        SCOPED_TRACE(describe(q) + " " + op_name(op));
        const std::array<KernelLaunch, 3> p = plan_gemm_fp8(T, n, k, DType::bf16);
        ASSERT_EQ(p.size(), 3u);
        const PlanTotals t = plan_totals({p.begin(), p.end()});
        const OpCost c = op_cost(q, op);
        EXPECT_EQ(t.launches, 3);
        EXPECT_DOUBLE_EQ(t.flops, c.flops);
        EXPECT_DOUBLE_EQ(t.bytes_read, c.bytes_read);
        EXPECT_DOUBLE_EQ(t.bytes_written, c.bytes_written);
        EXPECT_DOUBLE_EQ(t.scratch_bytes, 2.0 * T * k + 2.0 * T * k);  // x at 2 B, e4m3 twice
        EXPECT_GE(p[0].grid.x, 1);
        EXPECT_LE(p[0].grid.x, kDefaultSmCount * kFp8QuantBlocksPerSm);
        EXPECT_EQ(p[1].grid.x, p[0].grid.x);
      }
    }
  EXPECT_THROW(plan_gemm_fp8(1, 4096, 4096, DType::fp32), BadInput);  // fp8 inputs are 16-bit
  EXPECT_THROW(plan_gemm_fp8(1, 4096, 4104, DType::bf16), BadInput);  // k % 16 != 0
}

}  // namespace
}  // namespace tpb
