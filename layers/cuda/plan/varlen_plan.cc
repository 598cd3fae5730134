// Packing and plans of the CUDA varlen kernels (layers/cuda/kernels/attention_varlen.cu,
// row_argmax.cu); each plan mirrors its kernel's loop bounds.
#include "layers/cuda/plan/varlen_plan.h"

#include <algorithm>
#include <limits>
#include <string>

#include "base/errors.h"

namespace tpb {

int32_t narrow_int32(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max())
    throw BadInput(std::string("mixed step: ") + what + " " + std::to_string(v) +
                   " does not fit the cuda kernels' int32 indices");
  return static_cast<int32_t>(v);
}

void copy_blocks(const SeqSlice& s, int64_t need, int32_t* dst) {
  const int32_t* src = s.blocks.data();
  // One pass that vectorises (no early exit), then the copy: a serve step packs every
  // sequence's table for each layer's attention.
  int32_t low = 0;
  for (int64_t k = 0; k < need; ++k) low = std::min(low, src[k]);
  if (low < 0) narrow_int32(low, "block");  // throws, naming it
  std::copy_n(src, need, dst);
}

VarlenMeta pack_varlen(const StepBatch& b, int64_t block_tokens) {
  if (block_tokens < 1) throw BadInput("mixed step: block_tokens must be >= 1");
  VarlenMeta m;
  m.tokens = b.tokens();
  m.seqs = static_cast<int64_t>(b.seqs.size());
  m.block_tokens = block_tokens;
  int64_t table_len = 0;
  for (const SeqSlice& s : b.seqs) table_len += blocks_needed(s, block_tokens);
  m.token_seq = 0;
  m.token_pos = m.tokens;
  m.seq_row0 = 2 * m.tokens;
  m.seq_len = m.seq_row0 + m.seqs;
  m.seq_table0 = m.seq_len + m.seqs;
  m.tables = m.seq_table0 + m.seqs;
  m.data.assign(static_cast<std::size_t>(m.tables + table_len), 0);
  int64_t row = 0, table = 0;
  for (int64_t i = 0; i < m.seqs; ++i) {
    const SeqSlice& s = b.seqs[static_cast<std::size_t>(i)];
    const int64_t len = s.cached + s.new_tokens, need = blocks_needed(s, block_tokens);
    if (static_cast<int64_t>(s.blocks.size()) < need)
      throw BadInput("mixed step: sequence " + std::to_string(i) + " has " +
                     std::to_string(s.blocks.size()) + " blocks for " + std::to_string(len) +
                     " positions (needs " + std::to_string(need) + ")");
    for (int64_t j = 0; j < s.new_tokens; ++j, ++row) {
      m.data[static_cast<std::size_t>(m.token_seq + row)] = narrow_int32(i, "sequence");
      m.data[static_cast<std::size_t>(m.token_pos + row)] = narrow_int32(s.cached + j, "position");
    }
    m.data[static_cast<std::size_t>(m.seq_row0 + i)] = narrow_int32(row - s.new_tokens, "row");
    m.data[static_cast<std::size_t>(m.seq_len + i)] = narrow_int32(len, "length");
    m.data[static_cast<std::size_t>(m.seq_table0 + i)] = narrow_int32(table, "table offset");
    copy_blocks(s, need, m.data.data() + m.tables + table);
    table += need;
    m.max_len = std::max(m.max_len, len);
  }
  return m;
}

KernelLaunch plan_rope_varlen(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                              DType t) {
  // plan_rope's work; the grid is this kernel's own, one thread per pair (rope_kernel takes a
  // 16-byte chunk of pairs a thread).
  KernelLaunch k = plan_rope(tokens, q_heads, kv_heads, head_dim, t);
  k.kernel = "rope_varlen_kernel";
  const int64_t pairs = tokens * (q_heads + kv_heads) * (head_dim / 2);
  k.grid.x = (pairs + kElementwiseThreads - 1) / kElementwiseThreads;
  return k;
}

KernelLaunch plan_kv_write_varlen(int64_t tokens, int64_t kv_heads, int64_t head_dim, DType t) {
  // plan_kv_write's work; one thread per (token, kv element), not per 16-byte chunk.
  KernelLaunch k = plan_kv_write(tokens, kv_heads, head_dim, t);
  k.kernel = "kv_write_varlen_kernel";
  const int64_t n = tokens * kv_heads * head_dim;
  k.grid.x = (n + kElementwiseThreads - 1) / kElementwiseThreads;
  return k;
}

namespace {

bool decode_only(const StepBatch& b) {
  return std::all_of(b.seqs.begin(), b.seqs.end(),
                     [](const SeqSlice& s) { return s.new_tokens == 1; });
}

// The launch shape: the decode kernel's for a decode-only step, else the varlen kernel's.
VarlenAttnPlan varlen_launch(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                             int64_t head_dim, DType t, int sm_count, int64_t max_len) {
  VarlenAttnPlan p;
  const int64_t g = q_heads / kv_heads, tokens = b.tokens();
  if (decode_only(b)) {
    const DecodePlan d = plan_attention_decode(static_cast<int64_t>(b.seqs.size()), q_heads,
                                               kv_heads, head_dim, max_len, t, sm_count);
    p.decode_kernel = true;
    p.chunk = d.chunk;
    p.splits = d.splits;
    p.main.grid = d.main.grid;
    p.main.block = d.main.block;
    p.main.smem_bytes = d.main.smem_bytes;
    p.main.kernel = "attention_decode_paged_kernel";
    return p;
  }
  const int64_t base = std::max<int64_t>(1, tokens * kv_heads);
  const int64_t want = std::max<int64_t>(
      1, (static_cast<int64_t>(kDecodeBlocksPerSm) * std::max(sm_count, 1) + base - 1) / base);
  const int64_t tiles = (max_len + kVarlenTile - 1) / kVarlenTile;
  const int64_t tiles_per_split = (tiles + std::min(want, tiles) - 1) / std::min(want, tiles);
  p.chunk = tiles_per_split * kVarlenTile;
  p.splits = (max_len + p.chunk - 1) / p.chunk;
  p.main.kernel = "attention_varlen_kernel";
  p.main.grid = Dim3i{tokens, kv_heads, p.splits};
  p.main.block.x = kVarlenThreads;
  // Queries, accumulators [g][head_dim], scores [g][tile], running max and sum [g][2].
  p.main.smem_bytes = static_cast<int64_t>(sizeof(float)) * g * (2 * head_dim + kVarlenTile + 2);
  return p;
}

}  // namespace

VarlenAttnPlan plan_attention_varlen(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                     int64_t head_dim, DType t, int sm_count) {
  if (kv_heads <= 0 || q_heads % kv_heads != 0 || q_heads / kv_heads > kDecodeMaxGroup)
    throw BadInput(
        "attention: the cuda varlen kernel needs q_heads a multiple of kv_heads, at "
        "most " +
        std::to_string(kDecodeMaxGroup) + " per KV head (got " + std::to_string(q_heads) + " and " +
        std::to_string(kv_heads) + ")");
  if (head_dim % 32 != 0 || head_dim > 256)
    throw BadInput("attention: the cuda varlen kernel supports head_dim 32, 64, ..., 256 (got " +
                   std::to_string(head_dim) + ")");
  int64_t max_len = 1;
  for (const SeqSlice& s : b.seqs) max_len = std::max(max_len, s.cached + s.new_tokens);
  VarlenAttnPlan p = varlen_launch(b, q_heads, kv_heads, head_dim, t, sm_count, max_len);
  const KernelLaunch w = mixed_attention_work(b, q_heads, kv_heads, head_dim, t);
  KernelLaunch& k = p.main;
  k.op = w.op;
  k.flops = w.flops;
  k.bytes_read = w.bytes_read;
  if (p.splits == 1) {
    k.bytes_written = w.bytes_written;
    return p;
  }
  p.combine = plan_attention_combine(b.tokens() * q_heads, p.splits, head_dim, t);
  p.workspace_bytes = p.combine.scratch_bytes;
  k.scratch_bytes = p.workspace_bytes;
  return p;
}

KernelLaunch mixed_attention_work(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                  int64_t head_dim, DType t) {
  KernelLaunch k;
  k.op = Op::attention;
  const double e = dtype_bytes(t), row = static_cast<double>(head_dim) * e;
  for (const SeqSlice& s : b.seqs) {
    const double c = static_cast<double>(s.cached), n = static_cast<double>(s.new_tokens);
    k.flops += 4.0 * q_heads * head_dim * (n * c + n * (n + 1) / 2);
    k.bytes_read += (c + n) * 2 * kv_heads * row;
  }
  const double q = static_cast<double>(b.tokens()) * q_heads * row;
  k.bytes_read += q;
  k.bytes_written = q;
  return k;
}

KernelLaunch plan_row_argmax(int64_t rows, int64_t cols, DType t) {
  KernelLaunch k;
  k.kernel = "row_argmax_kernel";
  k.grid.x = rows;
  k.block.x = kArgmaxThreads;
  k.bytes_read = static_cast<double>(rows) * cols * dtype_bytes(t);
  k.bytes_written = 8.0 * rows;  // (max, column): 2 x 4 bytes
  return k;
}

}  // namespace tpb
