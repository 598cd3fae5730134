// The CUDA backend's mixed steps on the host: the packed batch its kernels index, and the
// varlen attention plan against the cost model (the one source of FLOPs and bytes).
#include <gtest/gtest.h>

#include <string>

#include "layers/base/errors.h"
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

TEST(VarlenPlan, AttentionWorkIsTheCostModels) {
  const ModelShape m = load_model("tiny", TPB_SOURCE_DIR "/configs");
  for (int tp : {1, 2}) {
    const ShardShape sh = shard_shape(m, tp);
    const StepBatch b = ragged();
    const StepCost c = mixed_step_cost(m, tp, DType::bf16, 1, b, false);
    const KernelLaunch k =
        plan_attention_varlen(b, sh.q_heads, sh.kv_heads, m.head_dim, DType::bf16);
    const OpCost* attn = nullptr;
    for (const OpCost& o : c.layer_ops)
      if (o.op == Op::attention) attn = &o;
    ASSERT_NE(attn, nullptr);
    EXPECT_DOUBLE_EQ(k.flops, attn->flops) << "tp " << tp;
    EXPECT_DOUBLE_EQ(k.bytes_read, attn->bytes_read) << "tp " << tp;
    EXPECT_DOUBLE_EQ(k.bytes_written, attn->bytes_written) << "tp " << tp;
    EXPECT_EQ(k.grid.x, 4);            // one block per new token ...
    EXPECT_EQ(k.grid.y, sh.kv_heads);  // ... and KV head
  }
}

TEST(VarlenPlan, RefusesShapesTheKernelCannotRun) {
  EXPECT_THROW(plan_attention_varlen(ragged(), 6, 4, 64, DType::bf16), BadInput);   // 6 % 4
  EXPECT_THROW(plan_attention_varlen(ragged(), 32, 1, 64, DType::bf16), BadInput);  // group 32
  EXPECT_THROW(plan_attention_varlen(ragged(), 8, 2, 48, DType::bf16), BadInput);   // d % 32
  EXPECT_NO_THROW(plan_attention_varlen(ragged(), 16, 1, 256, DType::bf16));
}

}  // namespace
}  // namespace tpb
