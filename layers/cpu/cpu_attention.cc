// CPU attention over a contiguous KV cache [batch, max_ctx, kv_heads, head_dim] (fp32).
// Decode reads each KV head's cache once for its whole GQA group, matching the cost model's
// KV bytes; prefill uses BLAS on 64-row query blocks, the heads of a GQA group stacked into
// one GEMM, so only the causal part is computed.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "layers/cpu/attention_kernels.h"
#include "layers/cpu/cpu_device.h"
#include "layers/cpu/target_clones.h"

namespace tpb {

using namespace cpu_kernels;

// Decode reads the cache as four sequential streams, positions p, c + p, 2c + p, 3c + p at once
// (c = ctx_len / 4): a single stream front to back tops out near 9 GB/s on this class of core,
// latency-bound, while four reach ~20 (side by side, 1024 positions, 16 q / 8 kv heads of 64,
// 32 layers' worth of cache, medians: scores 205 -> 105 us, weighted sum 194 -> 104 us per
// layer). Each score also gets four independent FMA chains instead of one. Head dims that
// are not a multiple of 8, and the ctx_len % 4 positions left over, take the one-position loop.
// The helpers are always inlined, so each target clone vectorises them for its own ISA.
TPB_CLONES void cpu_attention_decode(const float* qkv, const float* k_cache, const float* v_cache,
                                     float* out, int64_t ctx_len, const AttnShape& s,
                                     std::vector<float>& scratch) {
  const int64_t d = s.head_dim, kvw = s.kv_heads * d;
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * d;
  const std::size_t need = static_cast<std::size_t>(s.q_heads * ctx_len);
  if (scratch.size() < need) scratch.resize(need);
  float* sc = scratch.data();                      // [q_heads, ctx_len]
  const int64_t c = d % 8 == 0 ? ctx_len / 4 : 0;  // positions per stream
  const DecodeGeom g{d,
                     s.q_heads / s.kv_heads,
                     s.q_heads,
                     kvw,
                     ctx_len,
                     c,
                     c * kvw,
                     ctx_len,
                     1.0f / std::sqrt(static_cast<float>(d))};
  for (int64_t b = 0; b < s.batch; ++b) {
    decode_scores(g, qkv + b * row, k_cache + b * s.max_ctx * kvw, sc);
    for (int64_t h = 0; h < s.q_heads; ++h) softmax_inplace(sc + h * ctx_len, ctx_len);
    std::fill_n(out + b * s.q_heads * d, s.q_heads * d, 0.0f);
    decode_weighted_sum(g, sc, v_cache + b * s.max_ctx * kvw, out + b * s.q_heads * d);
  }
}

std::size_t attention_block_scratch(int64_t group, int64_t d, int64_t rows, int64_t positions) {
  return static_cast<std::size_t>(group * rows * (2 * d + positions));
}

// The group's query rows are packed head after head (qp), so that one GEMM scores them all
// against the shared K and one more weighs the shared V (half the GEMM calls of a head at a
// time; alone that measured the same, 0.97-1.03x). The softmax between them was 40% of the
// kernel on the baseline ISA; as a target clone (AVX2 here) the kernel ran 1.3-1.4x faster
// alone, and tiny's prefill attention at S = 512 went 180-213 -> 94-103 ms per step.
TPB_CLONES void cpu_attention_block(const AttnBlock& a, float* scratch) {
  const int64_t m = a.group * a.rows, d = a.d, cols = a.prior + a.rows;
  float* qp = scratch;
  float* op = qp + m * d;
  float* sc = op + m * d;
  for (int64_t h = 0; h < a.group; ++h)
    for (int64_t r = 0; r < a.rows; ++r)
      std::copy_n(a.q + r * a.q_ld + h * d, d, qp + (h * a.rows + r) * d);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, cols, d, a.scale, qp, d, a.k, a.kv_ld,
              0.0f, sc, cols);
  for (int64_t i = 0; i < m; ++i) {
    float* sr = sc + i * cols;
    const int64_t valid = a.prior + i % a.rows + 1;
    std::fill(sr + valid, sr + cols, 0.0f);
    softmax_inplace(sr, valid);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, d, cols, 1.0f, sc, cols, a.v, a.kv_ld,
              0.0f, op, d);
  for (int64_t h = 0; h < a.group; ++h)
    for (int64_t r = 0; r < a.rows; ++r)
      std::copy_n(op + (h * a.rows + r) * d, d, a.out + r * a.out_ld + h * d);
}

void cpu_attention_prefill(const float* qkv, const float* k_cache, const float* v_cache, float* out,
                           int64_t seq, const AttnShape& s, std::vector<float>& scratch) {
  const int64_t d = s.head_dim, group = s.q_heads / s.kv_heads;
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * d, kvw = s.kv_heads * d, ow = s.q_heads * d;
  const std::size_t need = attention_block_scratch(group, d, kPrefillBlock, seq);
  if (scratch.size() < need) scratch.resize(need);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t g = 0; g < s.kv_heads; ++g)
      for (int64_t i0 = 0; i0 < seq; i0 += kPrefillBlock) {
        const AttnBlock a{qkv + (b * seq + i0) * row + g * group * d,
                          row,
                          k_cache + b * s.max_ctx * kvw + g * d,
                          v_cache + b * s.max_ctx * kvw + g * d,
                          kvw,
                          out + (b * seq + i0) * ow + g * group * d,
                          ow,
                          group,
                          d,
                          std::min(kPrefillBlock, seq - i0),
                          i0,
                          1.0f / std::sqrt(static_cast<float>(d))};
        cpu_attention_block(a, scratch.data());
      }
}

}  // namespace tpb
