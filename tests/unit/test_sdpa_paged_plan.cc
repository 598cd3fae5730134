// --attention cudnn's paged attention for serve's mixed steps (sdpa_paged_plan.h), host side:
// the graph's bucketed shape, the per-step arrays cuDNN reads (lengths, ragged offsets, block
// tables), and the one launch's work against the cost model's mixed step. What a GPU run of it
// must agree with; the kernel itself is checked against the host reference by tpb_device_check.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "base/errors.h"
#include "layers/cost_model.h"
#include "layers/cuda/plan/sdpa_paged_plan.h"
#include "layers/cuda/plan/varlen_plan.h"
#include "layers/model_shape.h"

namespace tpb {
namespace {

// Three sequences, blocks of 4 positions: a decode at position 5 (blocks 7, 2), a 3-token
// chunk at positions 0..2 (block 9), and a 2-token chunk after 8 cached positions (blocks 1,
// 4, 6: 10 positions).
StepBatch mixed() {
  StepBatch b;
  b.seqs.push_back(SeqSlice{5, 1, true, {7, 2}});
  b.seqs.push_back(SeqSlice{0, 3, true, {9}});
  b.seqs.push_back(SeqSlice{8, 2, false, {1, 4, 6}});
  return b;
}

std::vector<int32_t> part(const SdpaPagedMeta& m, int64_t at, int64_t n) {
  return {m.data.begin() + at, m.data.begin() + at + n};
}

TEST(SdpaPagedPlan, BucketsTheShapeToPowersOfTwo) {
  // 32 query heads over 8 KV heads of 128: qkv rows of 48 x 128, output rows of 32 x 128.
  const SdpaPagedLayout l = sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4});
  EXPECT_EQ(l.batch, 4);  // 3 sequences
  EXPECT_EQ(l.s_q, 4);    // at most 3 new tokens
  EXPECT_EQ(l.pages, 4);  // at most 3 blocks
  EXPECT_EQ(l.block_tokens, 4);
  EXPECT_FLOAT_EQ(l.scale, 1.0f / std::sqrt(128.0f));
  const std::array<int64_t, 4> q_dim{4, 32, 4, 128}, q_stride{48 * 128, 128, 48 * 128, 1};
  EXPECT_EQ(l.q.dim, q_dim);
  EXPECT_EQ(l.q.stride, q_stride);
  const std::array<int64_t, 4> o_stride{32 * 128, 128, 32 * 128, 1};
  EXPECT_EQ(l.o.dim, q_dim);
  EXPECT_EQ(l.o.stride, o_stride);
  // The cache as kv_write_varlen fills it: block, position in the block, KV head, element.
  const std::array<int64_t, 4> k_dim{10, 8, 4, 128}, k_stride{4 * 8 * 128, 128, 8 * 128, 1};
  EXPECT_EQ(l.k.dim, k_dim);
  EXPECT_EQ(l.k.stride, k_stride);
  EXPECT_EQ(l.v.dim, k_dim);
  // One sequence of one token still makes a graph of 1 x 1, and 5 sequences one of 8.
  StepBatch one;
  one.seqs.push_back(SeqSlice{0, 1, true, {0}});
  const SdpaPagedLayout l1 = sdpa_paged_layout(one, 32, 8, 128, KvLayout{1, 16});
  EXPECT_EQ(l1.batch * l1.s_q * l1.pages, 1);
  StepBatch five = mixed();
  five.seqs.push_back(SeqSlice{0, 1, true, {3}});
  five.seqs.push_back(SeqSlice{0, 1, true, {5}});
  EXPECT_EQ(sdpa_paged_layout(five, 32, 8, 128, KvLayout{10, 4}).batch, 8);
}

TEST(SdpaPagedPlan, PacksLengthsOffsetsAndTables) {
  const int64_t qkv_row = 48 * 128, o_row = 32 * 128;
  const SdpaPagedLayout l = sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4});
  const SdpaPagedMeta m = pack_sdpa_paged(mixed(), l);
  EXPECT_EQ(part(m, m.seq_len_q, 4), (std::vector<int32_t>{1, 3, 2, 0}));
  EXPECT_EQ(part(m, m.seq_len_kv, 4), (std::vector<int32_t>{6, 3, 10, 0}));
  // Rows 0, 1..3, 4..5; the padding sequence and the end at row 6.
  const std::vector<int32_t> rows{0, 1, 4, 6, 6};
  std::vector<int32_t> want_q, want_o;
  for (int32_t r : rows) {
    want_q.push_back(static_cast<int32_t>(r * qkv_row));
    want_o.push_back(static_cast<int32_t>(r * o_row));
  }
  EXPECT_EQ(part(m, m.ragged_q, 5), want_q);
  EXPECT_EQ(part(m, m.ragged_o, 5), want_o);
  EXPECT_EQ(part(m, m.table, 16),
            (std::vector<int32_t>{7, 2, 0, 0, 9, 0, 0, 0, 1, 4, 6, 0, 0, 0, 0, 0}));
  EXPECT_EQ(m.data.size(), 4u + 4u + 5u + 5u + 16u);
  // The last new token of the third sequence (position 9) lives in its third block, row 1:
  // what the bottom-right causal band lets it see is positions [0, 9], all of its 10.
  const int32_t* table = m.data.data() + m.table + 2 * l.pages;
  EXPECT_EQ(table[9 / 4] * 4 + 9 % 4, 25);
}

TEST(SdpaPagedPlan, RefusesWhatTheGraphCannotHold) {
  StepBatch b = mixed();
  b.seqs[0].blocks = {7};  // 6 positions need 2 blocks of 4
  const SdpaPagedLayout l = sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4});
  EXPECT_THROW(pack_sdpa_paged(b, l), BadInput);
  b = mixed();
  b.seqs[1].new_tokens = 9;  // more tokens than the layout's s_q of 4
  b.seqs[1].blocks = {9, 3, 5};
  EXPECT_THROW(pack_sdpa_paged(b, l), BadInput);
  EXPECT_THROW(sdpa_paged_layout(mixed(), 6, 4, 64, KvLayout{10, 4}), BadInput);  // 6 % 4
  EXPECT_THROW(sdpa_paged_layout(StepBatch{}, 32, 8, 128, KvLayout{10, 4}), BadInput);
  // Offsets in int32: 2^31 / (48 x 128) rows is past 349525.
  StepBatch big;
  big.seqs.push_back(SeqSlice{0, 349526, true, std::vector<int32_t>(349526, 0)});
  big.seqs.push_back(SeqSlice{0, 1, true, {0}});
  const SdpaPagedLayout lb = sdpa_paged_layout(big, 32, 8, 128, KvLayout{349526, 1});
  EXPECT_THROW(pack_sdpa_paged(big, lb), BadInput);
}

TEST(SdpaPagedPlan, OneLaunchDoingTheCostModelsMixedAttention) {
  const ModelShape shape = load_model("tiny", TPB_SOURCE_DIR "/configs");
  for (int tp : {1, 2}) {
    const ShardShape sh = shard_shape(shape, tp);
    const StepCost c = mixed_step_cost(shape, tp, DTypes(DType::bf16), 1, mixed(), false);
    const OpCost* attn = nullptr;
    for (const OpCost& o : c.layer_ops)
      if (o.op == Op::attention) attn = &o;
    ASSERT_NE(attn, nullptr);
    const KernelLaunch k =
        plan_attention_sdpa_paged(mixed(), sh.q_heads, sh.kv_heads, shape.head_dim, DType::bf16);
    EXPECT_STREQ(k.kernel, "cudnn_sdpa_paged_fprop");
    EXPECT_EQ(k.op, Op::attention);
    EXPECT_DOUBLE_EQ(k.flops, attn->flops) << "tp " << tp;
    EXPECT_DOUBLE_EQ(k.bytes_read, attn->bytes_read) << "tp " << tp;
    EXPECT_DOUBLE_EQ(k.bytes_written, attn->bytes_written) << "tp " << tp;
    EXPECT_EQ(k.scratch_bytes, 0.0);  // the scores stay on chip
    EXPECT_EQ(k.launches, 1);
  }
}

}  // namespace
}  // namespace tpb
