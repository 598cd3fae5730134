// The CUDA backend's mixed steps on the host: the packed batch its kernels index, and the
// varlen attention plan against the cost model (the one source of FLOPs and bytes).
#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "layers/cost_model.h"
#include "layers/cuda/plan/varlen_plan.h"
#include "layers/model_shape.h"

namespace tpb {
namespace {

// Two sequences: a decode at position 5 (blocks 7, 2 of 4 positions) and a 3-token chunk at
// positions 0..2 (block 9).
StepBatch ragged() {
  StepBatch b;
  b.seqs.push_back(SeqSlice{5, 1, true, {7, 2}});
  b.seqs.push_back(SeqSlice{0, 3, true, {9}});
  return b;
}

std::vector<int32_t> part(const VarlenMeta& m, int64_t at, int64_t n) {
  return {m.data.begin() + at, m.data.begin() + at + n};
}

TEST(VarlenPlan, PacksEachTokensSequencePositionAndTable) {
  const VarlenMeta m = pack_varlen(ragged(), 4);
  EXPECT_EQ(m.tokens, 4);
  EXPECT_EQ(m.seqs, 2);
  EXPECT_EQ(m.max_len, 6);
  EXPECT_EQ(part(m, m.token_seq, 4), (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(part(m, m.token_pos, 4), (std::vector<int32_t>{5, 0, 1, 2}));
  EXPECT_EQ(part(m, m.seq_row0, 2), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(part(m, m.seq_len, 2), (std::vector<int32_t>{6, 3}));
  EXPECT_EQ(part(m, m.seq_table0, 2), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(part(m, m.tables, 3), (std::vector<int32_t>{7, 2, 9}));
  EXPECT_EQ(m.data.size(), 4u + 4u + 2u + 2u + 2u + 3u);
  // The kernel's slot for the decode token (position 5, block 5 / 4 = 1 -> block 2, row 1).
  const int32_t* table = m.data.data() + m.tables + m.data[m.seq_table0 + 0];
  EXPECT_EQ(table[5 / 4] * 4 + 5 % 4, 9);
}

TEST(VarlenPlan, RefusesAShortBlockTable) {
  StepBatch b = ragged();
  b.seqs[0].blocks = {7};  // 6 positions need 2 blocks of 4
  EXPECT_THROW(pack_varlen(b, 4), BadInput);
  EXPECT_THROW(pack_varlen(ragged(), 0), BadInput);
}

// Two decodes at positions 5 and 0: every sequence brings one token.
StepBatch decodes() {
  StepBatch b;
  b.seqs.push_back(SeqSlice{5, 1, true, {7, 2}});
  b.seqs.push_back(SeqSlice{0, 1, true, {9}});
  return b;
}

TEST(VarlenPlan, AttentionWorkIsTheCostModels) {
  const ModelShape m = load_model("tiny", TPB_SOURCE_DIR "/configs");
  for (const StepBatch& b : {ragged(), decodes()})
    for (int tp : {1, 2})
      for (int sms : {1, 132}) {
        const ShardShape sh = shard_shape(m, tp);
        const StepCost c = mixed_step_cost(m, tp, DTypes(DType::bf16), 1, b, false);
        const VarlenAttnPlan p =
            plan_attention_varlen(b, sh.q_heads, sh.kv_heads, m.head_dim, DType::bf16, sms);
        const OpCost* attn = nullptr;
        for (const OpCost& o : c.layer_ops)
          if (o.op == Op::attention) attn = &o;
        ASSERT_NE(attn, nullptr);
        // The kernels together (main, and the combine where there are splits) do the cost
        // model's work, whichever kernel runs; the partials are scratch, outside it.
        const PlanTotals t = plan_totals({p.main, p.combine});
        EXPECT_DOUBLE_EQ(t.flops, attn->flops) << "tp " << tp;
        EXPECT_DOUBLE_EQ(t.bytes_read, attn->bytes_read) << "tp " << tp;
        EXPECT_DOUBLE_EQ(t.bytes_written, attn->bytes_written) << "tp " << tp;
        EXPECT_EQ(p.main.grid.y, sh.kv_heads);  // a block per KV head ...
        if (p.decode_kernel) {                  // ... and split and sequence
          EXPECT_EQ(p.main.grid.x, p.splits);
          EXPECT_EQ(p.main.grid.z, 2);
        } else {  // ... and new token and split
          EXPECT_EQ(p.main.grid.x, 4);
          EXPECT_EQ(p.main.grid.z, p.splits);
        }
        EXPECT_EQ(t.scratch_bytes, p.splits > 1 ? 2 * p.workspace_bytes : 0.0);  // written, read
      }
}

TEST(VarlenPlan, ADecodeOnlyStepRunsTheDecodeKernelOverThePagedCache) {
  EXPECT_TRUE(plan_attention_varlen(decodes(), 4, 2, 64, DType::bf16, 132).decode_kernel);
  EXPECT_FALSE(plan_attention_varlen(ragged(), 4, 2, 64, DType::bf16, 132).decode_kernel);
  // Llama-3-8B sequences decoding at positions 1000 and 40: the decode plan of two sequences
  // at the longest one's 1001 positions (the shorter one's later splits are empty).
  StepBatch b;
  b.seqs = {SeqSlice{1000, 1, true, std::vector<int32_t>(63, 0)},
            SeqSlice{40, 1, true, std::vector<int32_t>(3, 1)}};
  const VarlenAttnPlan p = plan_attention_varlen(b, 32, 8, 128, DType::bf16, 132);
  const DecodePlan d = plan_attention_decode(2, 32, 8, 128, 1001, DType::bf16, 132);
  ASSERT_TRUE(p.decode_kernel);
  EXPECT_STREQ(p.main.kernel, "attention_decode_paged_kernel");
  EXPECT_EQ(p.chunk, d.chunk);
  EXPECT_EQ(p.splits, d.splits);
  EXPECT_GT(p.splits, 1);
  EXPECT_EQ(p.main.grid.x, d.main.grid.x);
  EXPECT_EQ(p.main.grid.z, 2);
  EXPECT_EQ(p.main.block.x, kDecodeThreads);
  EXPECT_EQ(p.main.smem_bytes, d.main.smem_bytes);
  EXPECT_STREQ(p.combine.kernel, "attention_combine_kernel");
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 2.0 * 32 * p.splits * (128 + 2) * 4);
  // Its work is the two sequences' own, not two of the longest.
  EXPECT_DOUBLE_EQ(p.main.flops, 4.0 * 32 * 128 * (1001 + 41));
}

TEST(VarlenPlan, FewTokensSplitThePositionsToFillTheGpu) {
  // A 2-token prefill chunk beside a Llama-3-8B decode at position 1000: 3 tokens x 8 KV heads
  // give 24 blocks; 132 SMs want 4 x 132 = 528, so 22 splits would be asked, but no split is
  // under a tile of 64 positions: 1001 positions are 16 tiles, one split each.
  StepBatch b;
  b.seqs = {SeqSlice{1000, 1, true, std::vector<int32_t>(63, 0)},
            SeqSlice{0, 2, true, std::vector<int32_t>(1, 1)}};
  VarlenAttnPlan p = plan_attention_varlen(b, 32, 8, 128, DType::bf16, 132);
  EXPECT_FALSE(p.decode_kernel);
  EXPECT_STREQ(p.main.kernel, "attention_varlen_kernel");
  EXPECT_EQ(p.chunk, kVarlenTile);
  EXPECT_EQ(p.splits, 16);
  EXPECT_EQ(p.main.grid.x * p.main.grid.y * p.main.grid.z, 3 * 8 * 16);
  EXPECT_STREQ(p.combine.kernel, "attention_combine_kernel");
  EXPECT_EQ(p.combine.grid.x, 3 * 32);  // one block per (token, query head)
  EXPECT_DOUBLE_EQ(p.workspace_bytes, 3.0 * 32 * 16 * (128 + 2) * 4);
  // On 8 SMs: 32 blocks wanted, 2 splits of 8 tiles each.
  p = plan_attention_varlen(b, 32, 8, 128, DType::bf16, 8);
  EXPECT_EQ(p.splits, 2);
  EXPECT_EQ(p.chunk, 8 * kVarlenTile);
  // A 512-token prefill chunk already gives 4096 blocks: one split, no combine, no partials.
  b.seqs = {SeqSlice{0, 512, true, std::vector<int32_t>(32, 0)}};
  p = plan_attention_varlen(b, 32, 8, 128, DType::bf16, 132);
  EXPECT_EQ(p.splits, 1);
  EXPECT_STREQ(p.combine.kernel, "");
  EXPECT_EQ(p.workspace_bytes, 0);
}

TEST(VarlenPlan, RefusesShapesTheKernelCannotRun) {
  EXPECT_THROW(plan_attention_varlen(ragged(), 6, 4, 64, DType::bf16, 132), BadInput);   // 6 % 4
  EXPECT_THROW(plan_attention_varlen(ragged(), 32, 1, 64, DType::bf16, 132), BadInput);  // group 32
  EXPECT_THROW(plan_attention_varlen(ragged(), 8, 2, 48, DType::bf16, 132), BadInput);   // d % 32
  EXPECT_NO_THROW(plan_attention_varlen(ragged(), 16, 1, 256, DType::bf16, 132));
}

}  // namespace
}  // namespace tpb
