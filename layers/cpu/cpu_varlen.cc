// The CPU backend's mixed-step ops (fp32): rope and KV writes at each sequence's own
// positions through its block table, paged attention (cpu_attention_varlen.cc), and the
// local argmax of greedy sampling.
#include <cstring>

#include "layers/cpu/cpu_device.h"

namespace tpb {

void CpuDevice::rope_varlen(void* qkv, const StepBatch& b, const AttnShape& s, float theta,
                            DType t) {
  cpu_require_fp32(t);
  // A sequence's chunk is rope's fixed case: tokens_per_seq = new_tokens, pos0 = cached.
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
  float* base = static_cast<float*>(qkv);
  for (const SeqSlice& q : b.seqs) {
    rope(base, q.new_tokens, q.new_tokens, q.cached, s, theta, t);
    base += q.new_tokens * row;
  }
}

void CpuDevice::kv_write_varlen(const void* qkv, void* k_cache, void* v_cache, const StepBatch& b,
                                const KvLayout& kv, const AttnShape& s, DType t) {
  cpu_require_fp32(t);
  const int64_t d = s.head_dim, kvw = s.kv_heads * d;
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * d;
  const float* src = static_cast<const float*>(qkv);
  float* kc = static_cast<float*>(k_cache);
  float* vc = static_cast<float*>(v_cache);
  for (const SeqSlice& q : b.seqs)
    for (int64_t j = 0; j < q.new_tokens; ++j, src += row) {
      const int64_t p = q.cached + j;
      const int64_t at =
          (q.blocks[p / kv.block_tokens] * kv.block_tokens + p % kv.block_tokens) * kvw;
      std::memcpy(kc + at, src + s.q_heads * d, kvw * sizeof(float));
      std::memcpy(vc + at, src + (s.q_heads + s.kv_heads) * d, kvw * sizeof(float));
    }
}

void CpuDevice::attention_varlen(const void* qkv, const void* k_cache, const void* v_cache,
                                 void* out, const StepBatch& b, const KvLayout& kv,
                                 const AttnShape& s, DType t) {
  cpu_require_fp32(t);
  cpu_attention_varlen(static_cast<const float*>(qkv), static_cast<const float*>(k_cache),
                       static_cast<const float*>(v_cache), static_cast<float*>(out), b, kv, s,
                       scratch_);
}

void CpuDevice::row_argmax(const void* logits, int64_t rows, int64_t cols, float* max_host,
                           int32_t* col_host, DType t) {
  cpu_require_fp32(t);
  const float* x = static_cast<const float*>(logits);
  for (int64_t r = 0; r < rows; ++r, x += cols) {
    int64_t best = 0;
    // Strictly greater: a tie keeps the lowest column, as on every rank and backend.
    for (int64_t c = 1; c < cols; ++c)
      if (x[c] > x[best]) best = c;
    max_host[r] = x[best];
    col_host[r] = static_cast<int32_t>(best);
  }
}

}  // namespace tpb
