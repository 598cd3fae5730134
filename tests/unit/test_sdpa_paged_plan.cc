// --attention cudnn's paged attention for serve's mixed steps (sdpa_paged_plan.h), host side:
// the graph's bucketed shape, the per-step arrays cuDNN reads (lengths, ragged offsets, block
// tables), and the one launch's work against the cost model's mixed step. What a GPU run of it
// must agree with; the kernel itself is checked against the host reference by tpb_device_check.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "base/errors.h"
#include "layers/cost_model.h"
#include "layers/cpu/cpu_device.h"
#include "layers/cuda/plan/paged_use_line.h"
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
  const SdpaPagedLayout l =
      sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4}, PagedPadding::empty_sequences);
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
  // One sequence of one token still makes a graph of 1 x 1, and 5 sequences one of 8, or of
  // 5 where cuDNN runs no empty sequence (before 9.25: the default).
  StepBatch one;
  one.seqs.push_back(SeqSlice{0, 1, true, {0}});
  const SdpaPagedLayout l1 = sdpa_paged_layout(one, 32, 8, 128, KvLayout{1, 16});
  EXPECT_EQ(l1.batch * l1.s_q * l1.pages, 1);
  StepBatch five = mixed();
  five.seqs.push_back(SeqSlice{0, 1, true, {3}});
  five.seqs.push_back(SeqSlice{0, 1, true, {5}});
  EXPECT_EQ(
      sdpa_paged_layout(five, 32, 8, 128, KvLayout{10, 4}, PagedPadding::empty_sequences).batch, 8);
  EXPECT_EQ(sdpa_paged_layout(five, 32, 8, 128, KvLayout{10, 4}).batch, 5);
  EXPECT_EQ(sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4}).s_q, 4);  // still rounded
}

// The device's cuDNN (PyTorch's CUDA 13 wheel pins 9.15) runs no sequence of length 0: every
// sequence of the graph has a token and a position, and the output's last offset is the end of
// the step's own rows, so nothing is written past `att`. Before, the layout always padded the
// batch to a power of two with sequences of lengths 0.
TEST(SdpaPagedPlan, EverySequenceHasATokenWhereCudnnRunsNoEmptyOne) {
  EXPECT_EQ(paged_padding_for(91500), PagedPadding::none);  // 9.15.0
  EXPECT_EQ(paged_padding_for(92400), PagedPadding::none);
  EXPECT_EQ(paged_padding_for(92500), PagedPadding::empty_sequences);
  const int64_t o_row = 32 * 128;
  StepBatch b;
  for (int n = 1; n <= 9; ++n) {
    b.seqs.push_back(SeqSlice{n % 3 ? 7 : 0, n % 4 ? 1 : 5, true, {1, 2, 3}});
    const SdpaPagedLayout l =
        sdpa_paged_layout(b, 32, 8, 128, KvLayout{10, 4}, paged_padding_for(91500));
    const SdpaPagedMeta m = pack_sdpa_paged(b, l);
    for (int64_t i = 0; i < l.batch; ++i) {
      EXPECT_GE(m.data[static_cast<std::size_t>(m.seq_len_q + i)], 1) << n << " seqs, seq " << i;
      EXPECT_GE(m.data[static_cast<std::size_t>(m.seq_len_kv + i)], 1) << n << " seqs, seq " << i;
    }
    EXPECT_EQ(m.data[static_cast<std::size_t>(m.ragged_o + l.batch)], b.tokens() * o_row);
  }
}

TEST(SdpaPagedPlan, PacksLengthsOffsetsAndTables) {
  const int64_t qkv_row = 48 * 128, o_row = 32 * 128;
  // The default layout: the step's 3 sequences, none empty.
  const SdpaPagedLayout l3 = sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4});
  const SdpaPagedMeta m3 = pack_sdpa_paged(mixed(), l3);
  EXPECT_EQ(l3.batch, 3);
  EXPECT_EQ(part(m3, m3.seq_len_q, 3), (std::vector<int32_t>{1, 3, 2}));
  EXPECT_EQ(part(m3, m3.seq_len_kv, 3), (std::vector<int32_t>{6, 3, 10}));
  EXPECT_EQ(part(m3, m3.ragged_o, 4), (std::vector<int32_t>{0, 1 * o_row, 4 * o_row, 6 * o_row}));
  EXPECT_EQ(m3.data.size(), 3u + 3u + 4u + 4u + 12u);
  // Padded (cuDNN >= 9.25): a fourth sequence of lengths 0.
  const SdpaPagedLayout l =
      sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4}, PagedPadding::empty_sequences);
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

// kernel_choices' line for serve's attention, exactly as tests/tools/test_device_table.py feeds
// it to launch/device_table.py (which keeps a point with native calls out of the cuDNN set).
TEST(SdpaPagedPlan, TheMixedStepAttentionLineTheTableReads) {
  EXPECT_EQ(paged_use_line(310, 0, ""),
            "mixed-step attention: cuDNN paged 310 calls, native 0 calls");
  EXPECT_EQ(paged_use_line(0, 310, "cudnn sdpa: check_support: no engine"),
            "mixed-step attention: cuDNN paged 0 calls, native 310 calls (cuDNN refused the "
            "step's paged graph: cudnn sdpa: check_support: no engine)");
}

TEST(SdpaPagedPlan, RefusesWhatTheGraphCannotHold) {
  StepBatch b = mixed();
  b.seqs[0].blocks = {7};  // 6 positions need 2 blocks of 4
  const SdpaPagedLayout l = sdpa_paged_layout(mixed(), 32, 8, 128, KvLayout{10, 4});
  EXPECT_THROW(pack_sdpa_paged(b, l), BadInput);
  b.seqs[0].blocks = {7, -2};  // a negative block
  EXPECT_THROW(pack_sdpa_paged(b, l), BadInput);
  EXPECT_THROW(pack_varlen(b, 4), BadInput);
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

// cuDNN's documented reading of the graph's tensors, written out plainly: Q and O element
// (b, h, s, e) at ragged_q[b] (ragged_o[b]) + h, s, e times the strides (the batch stride is
// not used when a tensor is ragged); K and V of sequence b at position p in the container's
// block table[b][p / block_tokens], row p % block_tokens; query head h reads KV head
// h / (q_heads / kv_heads); query s of b sees positions p < seq_len_kv[b] with
// p <= s + seq_len_kv[b] - seq_len_q[b] (the band at the bottom right); rows s >= seq_len_q[b]
// are not written.
void sdpa_as_cudnn_reads(const SdpaPagedLayout& l, const SdpaPagedMeta& m, const float* q,
                         const float* k, const float* v, float* o) {
  const int64_t hq = l.q.dim[1], hk = l.k.dim[1], d = l.q.dim[3];
  auto at = [&](int64_t part, int64_t i) { return m.data[static_cast<std::size_t>(part + i)]; };
  for (int64_t b = 0; b < l.batch; ++b) {
    const int64_t sq = at(m.seq_len_q, b), skv = at(m.seq_len_kv, b);
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t s = 0; s < sq; ++s) {
        const float* qr = q + at(m.ragged_q, b) + h * l.q.stride[1] + s * l.q.stride[2];
        const int64_t kh = h / (hq / hk), last = std::min(skv - 1, s + skv - sq);
        std::vector<double> w(static_cast<std::size_t>(last + 1));
        double mx = -INFINITY, sum = 0;
        auto kv_row = [&](const float* base, int64_t p) {
          const int64_t blk = at(m.table, b * l.pages + p / l.block_tokens);
          return base + blk * l.k.stride[0] + kh * l.k.stride[1] +
                 (p % l.block_tokens) * l.k.stride[2];
        };
        for (int64_t p = 0; p <= last; ++p) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += double(qr[e]) * kv_row(k, p)[e];
          w[p] = dot * l.scale;
          mx = std::max(mx, w[p]);
        }
        for (double& x : w) sum += (x = std::exp(x - mx));
        float* orow = o + at(m.ragged_o, b) + h * l.o.stride[1] + s * l.o.stride[2];
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t p = 0; p <= last; ++p) acc += w[p] * kv_row(v, p)[e];
          orow[e] = static_cast<float>(acc / sum);
        }
      }
  }
}

float value(std::size_t i, uint64_t salt) {
  const uint64_t h = (i * 2654435761u + salt * 40503u) % 1000003u;
  return static_cast<float>(h) / 500001.5f - 1.0f;
}

TEST(SdpaPagedPlan, ItsTensorsReadAsCudnnReadsThemAreTheCpuBackendsPagedAttention) {
  // Five sequences (a graph of 5, or of 8 padded), GQA group 2, blocks of 4 handed out in reverse:
  // decodes at several lengths, a chunk after a cached part and a first chunk; the CPU backend's
  // paged attention (layers/cpu, written apart from this layout) is the expected output.
  const int64_t hq = 4, hk = 2, d = 8, bt = 4;
  StepBatch b;
  for (auto [cached, n] :
       std::vector<std::pair<int64_t, int64_t>>{{5, 1}, {0, 7}, {9, 3}, {0, 1}, {13, 1}}) {
    b.seqs.push_back(SeqSlice{cached, n, true, {}});
  }
  int64_t blocks = 0;
  for (const SeqSlice& s : b.seqs) blocks += blocks_needed(s, bt);
  const KvLayout kv{blocks, bt};
  int64_t next = blocks;
  for (SeqSlice& s : b.seqs)
    for (int64_t i = 0; i < blocks_needed(s, bt); ++i) s.blocks.push_back(int32_t(--next));
  const int64_t row = (hq + 2 * hk) * d, tokens = b.tokens();
  std::vector<float> qkv(tokens * row), kc(blocks * bt * hk * d), vc(kc.size());
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = value(i, 1);
  for (std::size_t i = 0; i < kc.size(); ++i) kc[i] = value(i, 2), vc[i] = value(i, 3);
  std::vector<float> want(tokens * hq * d), got(want.size(), NAN), scratch;
  cpu_attention_varlen(qkv.data(), kc.data(), vc.data(), want.data(), b, kv,
                       AttnShape{int64_t(b.seqs.size()), hq, hk, d, 0}, scratch);
  for (PagedPadding pad : {PagedPadding::none, PagedPadding::empty_sequences}) {
    const SdpaPagedLayout l = sdpa_paged_layout(b, hq, hk, d, kv, pad);
    ASSERT_EQ(l.batch, pad == PagedPadding::none ? 5 : 8);
    std::fill(got.begin(), got.end(), NAN);
    sdpa_as_cudnn_reads(l, pack_sdpa_paged(b, l), qkv.data(), kc.data(), vc.data(), got.data());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5) << "element " << i << " of " << want.size();
  }
}

}  // namespace
}  // namespace tpb
