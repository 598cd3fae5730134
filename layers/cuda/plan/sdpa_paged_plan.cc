// The layout, packed arrays and plan of cuDNN's paged attention for mixed steps.
#include "layers/cuda/plan/sdpa_paged_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "layers/cuda/plan/varlen_plan.h"

namespace tpb {
namespace {

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

PagedPadding paged_padding_for(int64_t cudnn_version) {
  return cudnn_version >= 92500 ? PagedPadding::empty_sequences : PagedPadding::none;
}

SdpaPagedLayout sdpa_paged_layout(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                  int64_t head_dim, const KvLayout& kv, PagedPadding pad) {
  if (kv_heads <= 0 || q_heads % kv_heads != 0)
    throw BadInput("attention: q_heads (" + std::to_string(q_heads) +
                   ") must be a multiple of kv_heads (" + std::to_string(kv_heads) + ")");
  if (b.seqs.empty()) throw BadInput("attention: a mixed step without sequences");
  if (kv.block_tokens < 1) throw BadInput("mixed step: block_tokens must be >= 1");
  int64_t s_q = 1, pages = 1;
  for (const SeqSlice& s : b.seqs) {
    s_q = std::max(s_q, s.new_tokens);
    pages = std::max(pages, blocks_needed(s, kv.block_tokens));
  }
  SdpaPagedLayout l;
  const auto n = static_cast<int64_t>(b.seqs.size());
  l.batch = pad == PagedPadding::empty_sequences ? pow2_at_least(n) : n;
  l.s_q = pow2_at_least(s_q);
  l.pages = pow2_at_least(pages);
  l.block_tokens = kv.block_tokens;
  const int64_t qkv_row = (q_heads + 2 * kv_heads) * head_dim, o_row = q_heads * head_dim;
  const int64_t kv_row = kv_heads * head_dim;
  // Rows: the batch stride is the row's, as for packed rows; the ragged offsets place each
  // sequence (cuDNN reads a sequence's rows from its offset on).
  l.q = {{l.batch, q_heads, l.s_q, head_dim}, {qkv_row, head_dim, qkv_row, 1}};
  l.o = {{l.batch, q_heads, l.s_q, head_dim}, {o_row, head_dim, o_row, 1}};
  // The cache [num_blocks][block_tokens][kv_heads][head_dim] (kv_write_varlen's slots).
  l.k = {{kv.num_blocks, kv_heads, kv.block_tokens, head_dim},
         {kv.block_tokens * kv_row, head_dim, kv_row, 1}};
  l.v = l.k;
  l.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return l;
}

SdpaPagedMeta pack_sdpa_paged(const StepBatch& b, const SdpaPagedLayout& l) {
  const auto n = static_cast<int64_t>(b.seqs.size());
  if (n > l.batch) throw BadInput("attention: more sequences than the layout's batch");
  SdpaPagedMeta m;
  m.seq_len_q = 0;
  m.seq_len_kv = l.batch;
  m.ragged_q = 2 * l.batch;
  m.ragged_o = m.ragged_q + l.batch + 1;
  m.table = m.ragged_o + l.batch + 1;
  m.data.assign(static_cast<std::size_t>(m.table + l.batch * l.pages), 0);
  const int64_t qkv_row = l.q.stride[2], o_row = l.o.stride[2];
  auto at = [&](int64_t part, int64_t i) -> int32_t& {
    return m.data[static_cast<std::size_t>(part + i)];
  };
  int64_t row = 0;
  for (int64_t i = 0; i <= l.batch; ++i) {
    at(m.ragged_q, i) = narrow_int32(row * qkv_row, "query offset");
    at(m.ragged_o, i) = narrow_int32(row * o_row, "output offset");
    if (i >= n) continue;
    const SeqSlice& s = b.seqs[static_cast<std::size_t>(i)];
    const int64_t need = blocks_needed(s, l.block_tokens);
    if (static_cast<int64_t>(s.blocks.size()) < need || need > l.pages || s.new_tokens > l.s_q)
      throw BadInput("mixed step: sequence " + std::to_string(i) + " has " +
                     std::to_string(s.blocks.size()) + " blocks for " +
                     std::to_string(s.cached + s.new_tokens) + " positions (needs " +
                     std::to_string(need) + ", the layout " + std::to_string(l.pages) + ")");
    at(m.seq_len_q, i) = narrow_int32(s.new_tokens, "new tokens");
    at(m.seq_len_kv, i) = narrow_int32(s.cached + s.new_tokens, "length");
    copy_blocks(s, need, &at(m.table, i * l.pages));
    row += s.new_tokens;
  }
  return m;
}

KernelLaunch plan_attention_sdpa_paged(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                       int64_t head_dim, DType t) {
  KernelLaunch k = mixed_attention_work(b, q_heads, kv_heads, head_dim, t);
  k.kernel = "cudnn_sdpa_paged_fprop";
  k.grid.x = k.block.x = 0;
  return k;
}

}  // namespace tpb
