// The CPU attention kernels' inner loops, shared by the contiguous-cache ops
// (cpu_attention.cc) and the paged ones (cpu_attention_varlen.cc). Internal to layers/cpu.
// Every helper is always inlined, so each caller's target clone vectorises it for its ISA.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "layers/cpu/vec_math.h"

namespace tpb::cpu_kernels {

// Eight floats from each of the four streams at p, p + cs, p + 2cs, p + 3cs.
[[gnu::always_inline]] inline void load8x4(F8& v0, F8& v1, F8& v2, F8& v3, const float* p,
                                           int64_t cs) {
  load8(v0, p);
  load8(v1, p + cs);
  load8(v2, p + 2 * cs);
  load8(v3, p + 3 * cs);
}
[[gnu::always_inline]] inline float sum8(const F8& v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
// The sums of a0..a3's lanes together, as three rounds of pairwise adds over shuffled
// pairs (what hadd does): ~11 operations for the four where sum8 takes ~10 each.
typedef float F4 __attribute__((vector_size(16)));
[[gnu::always_inline]] inline void sum8x4(F4& out, const F8& a0, const F8& a1, const F8& a2,
                                          const F8& a3) {
  const F8 s01 = __builtin_shufflevector(a0, a1, 0, 2, 8, 10, 4, 6, 12, 14) +
                 __builtin_shufflevector(a0, a1, 1, 3, 9, 11, 5, 7, 13, 15);
  const F8 s23 = __builtin_shufflevector(a2, a3, 0, 2, 8, 10, 4, 6, 12, 14) +
                 __builtin_shufflevector(a2, a3, 1, 3, 9, 11, 5, 7, 13, 15);
  // t = [a0 0..3, a1 0..3, a2 0..3, a3 0..3, a0 4..7, a1 4..7, a2 4..7, a3 4..7]
  const F8 t = __builtin_shufflevector(s01, s23, 0, 2, 8, 10, 4, 6, 12, 14) +
               __builtin_shufflevector(s01, s23, 1, 3, 9, 11, 5, 7, 13, 15);
  out = __builtin_shufflevector(t, t, 0, 1, 2, 3) + __builtin_shufflevector(t, t, 4, 5, 6, 7);
}

// Softmax of row[0..n) in place, eight lanes at a time; the n % 8 left over go through one
// more vector padded with -inf, whose exp is 0, so every element takes the same exp.
[[gnu::always_inline]] inline void softmax_inplace(float* row, int64_t n) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const int64_t body = n / 8 * 8, tail = n - body;
  F8 mv = F8{} - kInf, v;
  for (int64_t i = 0; i < body; i += 8) {
    load8(v, row + i);
    select_lanes(mv, v > mv, v, mv);
  }
  float mx = -kInf;
  for (int l = 0; l < 8; ++l) mx = std::max(mx, mv[l]);
  for (int64_t i = body; i < n; ++i) mx = std::max(mx, row[i]);
  F8 sv = {}, e;
  for (int64_t i = 0; i < body; i += 8) {
    load8(v, row + i);
    v -= mx;
    exp_lanes(e, v);
    store8(row + i, e);
    sv += e;
  }
  if (tail > 0) {
    float pad[8];
    std::fill_n(pad, 8, -kInf);
    std::copy_n(row + body, tail, pad);
    load8(v, pad);
    v -= mx;
    exp_lanes(e, v);
    store8(pad, e);
    std::copy_n(pad, tail, row + body);
    sv += e;
  }
  const float inv = 1.0f / sum8(sv);
  for (int64_t i = 0; i < n; ++i) row[i] *= inv;
}

// One sequence's decode geometry: c positions per stream (0 when the head dim is not a
// multiple of 8), cs the stream stride in the cache.
// ld is the stride of a head's score row: ctx_len for a whole cache, the sequence's length
// when a paged cache is read run by run (the caller offsets sc to the run's first position).
struct DecodeGeom {
  int64_t d, group, q_heads, kvw, ctx_len, c, cs, ld;
  float scale;
};

// How many positions ahead each of the four streams is prefetched, one line per 16 floats
// of a KV head's row, by the first query head of its group. Side by side (the decode kernel
// alone, tiny's shape, B = 16 and 32 sequences at context 129, 8 layers' caches): none ->
// 4 positions 1.06x, 4 -> 2 positions 1.06-1.16x, 1 about as 2.
constexpr int64_t kPrefetchPositions = 2;
[[gnu::always_inline]] inline void prefetch_streams(const float* p, int64_t d, int64_t cs,
                                                    int64_t ahead) {
  for (int64_t i = 0; i < d; i += 16)
    for (int s = 0; s < 4; ++s) __builtin_prefetch(p + s * cs + ahead + i, 0, 3);
}

// Calls f(p, h, row) for every four-stream position p < c and query head h, positions outer
// and heads inner, with the cache row (K or V) that head h reads at p; the first head of each
// GQA group prefetches its streams ahead for the whole group. f must be always inlined too
// (__attribute__((always_inline)) on the lambda), so that it is compiled for the caller's clone.
template <class F>
[[gnu::always_inline]] inline void for_stream_rows(const DecodeGeom& g, const float* base, F&& f) {
  for (int64_t p = 0; p < g.c; ++p) {
    const float* at = base + p * g.kvw;
    for (int64_t h = 0; h < g.q_heads; ++h) {
      const float* row = at + (h / g.group) * g.d;
      if (h % g.group == 0) prefetch_streams(row, g.d, g.cs, kPrefetchPositions * g.kvw);
      f(p, h, row);
    }
  }
}

// Scores sc[h, p] = q_h . k_p * scale for every position p, four streams at once.
[[gnu::always_inline]] inline void decode_scores(const DecodeGeom& g, const float* q,
                                                 const float* kb, float* sc) {
  const int64_t d = g.d, c = g.c, cs = g.cs;
  const auto score = [&](int64_t p, int64_t h, const float* k) __attribute__((always_inline)) {
    const float* qh = q + h * d;
    F8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (int64_t i = 0; i < d; i += 8) {
      F8 qv, k0, k1, k2, k3;
      load8(qv, qh + i);
      load8x4(k0, k1, k2, k3, k + i, cs);
      a0 += qv * k0;
      a1 += qv * k1;
      a2 += qv * k2;
      a3 += qv * k3;
    }
    F4 sums;
    sum8x4(sums, a0, a1, a2, a3);
    sums *= g.scale;
    float* sh = sc + h * g.ld + p;
    sh[0] = sums[0];
    sh[c] = sums[1];
    sh[2 * c] = sums[2];
    sh[3 * c] = sums[3];
  };
  for_stream_rows(g, kb, score);
  // Positions outer, heads inner: K and V are read once, front to back, as the cache is
  // laid out ([pos][kv_head][d]), which is what the cost model's KV bytes assume.
  for (int64_t p = 4 * c; p < g.ctx_len; ++p) {
    const float* kp = kb + p * g.kvw;
    for (int64_t h = 0; h < g.q_heads; ++h) {
      const float* k = kp + (h / g.group) * d;
      const float* qh = q + h * d;
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < d; ++i) acc += qh[i] * k[i];
      sc[h * g.ld + p] = acc * g.scale;
    }
  }
}

// out_h += sum_p w[h, p] v_p, four streams at once; the caller zeroes `ob` first (a paged
// cache sums its runs into it).
[[gnu::always_inline]] inline void decode_weighted_sum(const DecodeGeom& g, const float* sc,
                                                       const float* vb, float* ob) {
  const int64_t d = g.d, c = g.c, cs = g.cs;
  const auto accumulate = [&](int64_t p, int64_t h, const float* v) __attribute__((always_inline)) {
    const float* w = sc + h * g.ld + p;
    const float w0 = w[0], w1 = w[c], w2 = w[2 * c], w3 = w[3 * c];
    float* o = ob + h * d;
    for (int64_t i = 0; i < d; i += 8) {
      F8 acc, v0, v1, v2, v3;
      load8(acc, o + i);
      load8x4(v0, v1, v2, v3, v + i, cs);
      acc += w0 * v0 + w1 * v1 + w2 * v2 + w3 * v3;
      store8(o + i, acc);
    }
  };
  for_stream_rows(g, vb, accumulate);
  for (int64_t p = 4 * c; p < g.ctx_len; ++p) {
    const float* vp = vb + p * g.kvw;
    for (int64_t h = 0; h < g.q_heads; ++h) {
      const float* v = vp + (h / g.group) * d;
      float* o = ob + h * d;
      const float w = sc[h * g.ld + p];
#pragma omp simd
      for (int64_t i = 0; i < d; ++i) o[i] += w * v[i];
    }
  }
}

}  // namespace tpb::cpu_kernels
