// CPU attention of a mixed step over a paged KV cache [num_blocks, block_tokens, kv_heads, d]
// (fp32). The block table is read as runs of physically consecutive blocks, so a slot cache
// (one block per sequence) is one run and the kernels below do what cpu_attention.cc does on
// a contiguous cache. Decode rows stream each KV head's positions once for the whole GQA
// group (the cost model's KV bytes); a chunk of several tokens packs each KV head once for
// its group and uses BLAS on 64-row query blocks, the group's heads stacked
// (cpu_attention_block).
#include <algorithm>
#include <cmath>

#include "layers/cpu/attention_kernels.h"
#include "layers/cpu/cpu_device.h"
#include "layers/cpu/target_clones.h"

namespace tpb {

using namespace cpu_kernels;

namespace {

// A run of physically consecutive blocks: positions [p0, p0 + n) of a sequence at rows
// phys.. of the cache. A plain loop, not a callback, so the cloned kernel inlines it.
struct Run {
  int64_t p0 = 0, n = 0, phys = 0;
};

// The run that starts at table entry k (advanced past it) within positions [0, len); false
// when none is left.
inline bool next_run(const std::vector<int32_t>& blocks, int64_t bt, int64_t len, int64_t& k,
                     Run& r) {
  if (k * bt >= len) return false;
  int64_t e = k + 1;
  while (e * bt < len && blocks[e] == blocks[e - 1] + 1) ++e;
  r = Run{k * bt, std::min(e * bt, len) - k * bt, static_cast<int64_t>(blocks[k]) * bt};
  k = e;
  return true;
}

struct Paged {
  const float *k, *v;
  int64_t bt, kvw;
};

// One query token (all its heads) over positions [0, len): the decode kernel of
// cpu_attention.cc run by run, its scores strided by len.
TPB_CLONES void decode_row(const float* q, const Paged& pc, const SeqSlice& s, int64_t len,
                           const AttnShape& a, float* sc, float* out) {
  const int64_t d = a.head_dim;
  DecodeGeom g{d,
               a.q_heads / a.kv_heads,
               a.q_heads,
               pc.kvw,
               0,
               0,
               0,
               len,
               1.0f / std::sqrt(static_cast<float>(d))};
  Run r;
  for (int64_t k = 0; next_run(s.blocks, pc.bt, len, k, r);) {
    g.ctx_len = r.n;
    g.c = d % 8 == 0 ? r.n / 4 : 0;  // four streams within the run
    g.cs = g.c * pc.kvw;
    decode_scores(g, q, pc.k + r.phys * pc.kvw, sc + r.p0);
  }
  for (int64_t h = 0; h < a.q_heads; ++h) softmax_inplace(sc + h * len, len);
  std::fill_n(out, a.q_heads * d, 0.0f);
  for (int64_t k = 0; next_run(s.blocks, pc.bt, len, k, r);) {
    g.ctx_len = r.n;
    g.c = d % 8 == 0 ? r.n / 4 : 0;
    g.cs = g.c * pc.kvw;
    decode_weighted_sum(g, sc + r.p0, pc.v + r.phys * pc.kvw, out);
  }
}

// Copies KV head g of positions [0, len) into dense [len, d] rows, run by run: each KV head
// is read from the cache once for its whole query group, and the GEMMs below then see one
// matrix instead of a call per block (16-position blocks would make them tiny: 2.7x slower
// for a 512-token chunk with tables out of order).
void pack_head(const float* cache, const Paged& pc, const SeqSlice& s, int64_t len, int64_t g,
               int64_t d, float* dst) {
  Run r;
  for (int64_t k = 0; next_run(s.blocks, pc.bt, len, k, r);)
    for (int64_t p = 0; p < r.n; ++p)
      std::copy_n(cache + (r.phys + p) * pc.kvw + g * d, d, dst + (r.p0 + p) * d);
}

// A chunk of n > 1 new tokens after `cached` positions, per KV head: its K and V packed, then
// per 64-row query block the group's heads together (cpu_attention_block, as prefill does).
void chunk_rows(const float* qkv, const Paged& pc, const SeqSlice& s, const AttnShape& a,
                float* scratch, float* out) {
  const int64_t d = a.head_dim, group = a.q_heads / a.kv_heads, len = s.cached + s.new_tokens;
  const int64_t row = (a.q_heads + 2 * a.kv_heads) * d, ow = a.q_heads * d;
  float *kp = scratch, *vp = scratch + len * d, *block = scratch + 2 * len * d;
  for (int64_t g = 0; g < a.kv_heads; ++g) {
    pack_head(pc.k, pc, s, len, g, d, kp);
    pack_head(pc.v, pc, s, len, g, d, vp);
    for (int64_t i0 = 0; i0 < s.new_tokens; i0 += kPrefillBlock) {
      const AttnBlock b{qkv + i0 * row + g * group * d,
                        row,
                        kp,
                        vp,
                        d,
                        out + i0 * ow + g * group * d,
                        ow,
                        group,
                        d,
                        std::min(kPrefillBlock, s.new_tokens - i0),
                        s.cached + i0,
                        1.0f / std::sqrt(static_cast<float>(d))};
      cpu_attention_block(b, block);
    }
  }
}

}  // namespace

void cpu_attention_varlen(const float* qkv, const float* k_cache, const float* v_cache, float* out,
                          const StepBatch& b, const KvLayout& kv, const AttnShape& a,
                          std::vector<float>& scratch) {
  const int64_t d = a.head_dim, row = (a.q_heads + 2 * a.kv_heads) * d;
  std::size_t need = 0;
  for (const SeqSlice& s : b.seqs) {
    const int64_t len = s.cached + s.new_tokens;
    const std::size_t n = s.new_tokens == 1 ? static_cast<std::size_t>(a.q_heads * len)
                                            : static_cast<std::size_t>(2 * d * len) +
                                                  attention_block_scratch(a.q_heads / a.kv_heads, d,
                                                                          kPrefillBlock, len);
    need = std::max(need, n);
  }
  if (scratch.size() < need) scratch.resize(need);
  const Paged pc{k_cache, v_cache, kv.block_tokens, a.kv_heads * d};
  int64_t r0 = 0;
  for (const SeqSlice& s : b.seqs) {
    if (s.new_tokens == 1)
      decode_row(qkv + r0 * row, pc, s, s.cached + 1, a, scratch.data(), out + r0 * a.q_heads * d);
    else
      chunk_rows(qkv + r0 * row, pc, s, a, scratch.data(), out + r0 * a.q_heads * d);
    r0 += s.new_tokens;
  }
}

}  // namespace tpb
