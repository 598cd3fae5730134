// y = x * W^T for decode's few tokens, with W streamed from memory once per call whatever m is.
//
// A pass takes four rows of W, one from each quarter (r, q + r, 2q + r, 3q + r; q = n / 4), so
// that W is read as four long sequential streams. Four adjacent rows instead make four
// streams only k floats long that all restart together; with k = 1024 each is one 4 KiB page
// and the hardware prefetchers retrain on every pass. Side by side (fp32, 1 thread, 8 layers'
// worth of W, m = 1, medians): 8192x1024 13.8 -> 19.7 GB/s, 2048x1024 14.4 -> 19.7.
//
// Within a pass the tokens go through a register tile: with AVX2's 16 registers, 3 tokens x 4
// rows of 8-lane accumulators plus the 4 W vectors; with AVX-512's 32, 6 tokens x 4 rows of
// 16-lane accumulators, 4 W vectors and the x vector (29). Each W vector loaded feeds 3 (6)
// FMAs instead of 1. The pass covers at most kChunk columns, so that its 4 rows of W (16 KiB)
// stay in L1 while every token tile reads them: W comes from memory on the first tile and
// from L1 on the others, and x (m x kChunk floats) from L2. Looping tokens outside the columns
// instead (one token's dot products at a time) re-read W from cache per token and grew the
// step time nearly linearly with the batch.
//
// Past kLanesFrom tokens the AVX-512 path turns the tile around: the tokens go in the vector
// lanes (x packed once per call as xp[j][16 V], V = 1 vector of 16 tokens up to 16 tokens,
// else 2, zero-padded) and each W element is broadcast into an FMA with every token at once,
// 12 rows at a time. W is then read once, in order, with no tile re-reading it from L1 and no
// horizontal sums. Side by side in tiny's decode step (TP 1, context 128, medians of 3 sweeps,
// both binaries alternating): B = 32 128 -> 110 ms (gate_up_proj 60 -> 49 ms per step) when
// it came; B = 16 79 -> 60 ms (gate_up_proj 39 -> 29) once the tile's row addressing stopped
// spilling (lane_tile12). At 8..12 tokens half the lanes or more would be padding, and the
// dot-product tile stayed faster (A/B driver, m = 8: lanes 0.65-0.9x). 12 rows was the best
// of 8..14.
#include "layers/cpu/skinny_gemm.h"

#include <algorithm>
#include <vector>

#include "layers/cpu/target_clones.h"

namespace tpb {

namespace {

// L floats as a GCC/Clang vector: 8 is one AVX2 register in the x86-64-v3 clone and two SSE
// registers in the default one, 16 one AVX-512 register in the x86-64-v4 variant. Helpers are
// always inlined, so each variant compiles them for its own ISA, and they pass vectors only
// by reference: clang rejects a by-value vector wider than the caller's ISA even where it will
// be inlined (-O0, the sanitizer builds), and GCC warns of the ABI change (-Wpsabi).
template <int L>
struct Lanes;
template <>
struct Lanes<8> {
  using V = float __attribute__((vector_size(32)));
};
template <>
struct Lanes<16> {
  using V = float __attribute__((vector_size(64)));
};
template <int L>
using vec = typename Lanes<L>::V;

constexpr int kRows = 4;          // rows of W per pass, one per quarter
constexpr int64_t kChunk = 1024;  // columns per pass: 4 rows x 4 KiB of W stay in L1
// How far ahead of the loads each W stream is prefetched, in floats (1 KiB). The out-of-order
// window alone keeps fewer lines in flight the more FMAs there are per byte, so without it
// the stream rate fell as m grew (m = 1/2/4: 13.4/12.3/9.6 GB/s without, 15.8/15.9/13.0
// with; 128 to 384 floats all within 3%, prefetchnta 3x slower). Past the end of a row the
// address is the quarter's next row, which the next pass reads; prefetches never fault.
constexpr int64_t kPrefetch = 256;
constexpr int64_t kLine = 16;  // floats per 64-byte cache line: one prefetch per stream each

// One pass: the four rows' starts, and the columns [kb, ke) it covers.
struct Pass {
  const float* w[kRows];
  int64_t kb, ke;
};

// Where a tile's sums go: y[t * n + s * q] for token t and row stream s. Every column chunk
// after the first adds to what the earlier ones wrote.
struct Out {
  float* y;
  int64_t n, q;
  bool add;
};

// Into a value, not through a reference to the vector type: clang keeps a vector type's full
// alignment on a reference even through an aligned(4) typedef (UBSan: misaligned reference),
// and a fixed-size memcpy into one vector compiles to the same single unaligned load.
template <int L>
[[gnu::always_inline]] inline void load(vec<L>& v, const float* p) {
  __builtin_memcpy(&v, p, sizeof v);
}

// Lanes summed as a tree, each level one shuffle and one add of half the width. A loop over a
// float array left GCC a scalar loop through the stack per sum, 24 of them per 6-token tile
// (measured: the AVX-512 path at m = 32 at 0.6x the AVX2 one).
[[gnu::always_inline]] inline float sum(const vec<8>& v) {
  using f32x4 = float __attribute__((vector_size(16)));
  const f32x4 h =
      __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
  return (h[0] + h[2]) + (h[1] + h[3]);
}
[[gnu::always_inline]] inline float sum(const vec<16>& v) {
  const vec<8> h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  return sum(h);
}

// acc[t][s] += x[t][j, j + L) * w_s[j, j + L) for the T tokens and the pass's four rows.
// The pass comes by value and the W vectors are four locals: loading into an array of
// vectors kept the W rows on the stack, a store-forwarding stall per load (measured: 4x
// slower at m = 32).
template <int L, int T>
[[gnu::always_inline]] inline void fma_step(vec<L> (&acc)[T][kRows], const float* x, int64_t k,
                                            const Pass p, int64_t j) {
  vec<L> w0, w1, w2, w3;
  load<L>(w0, p.w[0] + j);
  load<L>(w1, p.w[1] + j);
  load<L>(w2, p.w[2] + j);
  load<L>(w3, p.w[3] + j);
  for (int t = 0; t < T; ++t) {
    vec<L> xv;
    load<L>(xv, x + t * k + j);
    acc[t][0] += xv * w0;
    acc[t][1] += xv * w1;
    acc[t][2] += xv * w2;
    acc[t][3] += xv * w3;
  }
}

// What a tile prefetches. The first tile of a pass, the one that brings W from memory, takes
// each stream kPrefetch floats ahead, one line per 16 columns (near). The others, which read
// W from L1, take their share of the next pass's lines (far): lines far0 + (i * every + nth) *
// kLine for their i-th 16 columns, below far_end. Without them memory sat idle while those
// tiles ran, and the GEMM read W at the rate of its first tile only (m = 8: two tiles).
// prefetcht1 (into L2): the next pass's 16 KiB would otherwise evict this pass's W and x from
// L1. Side by side at m = 8 (bench_skinny_gemm, TP 1, two rounds, all four GEMMs): 8.6-10.9 ->
// 11.2-12.4 GB/s; in tiny's decode step at B = 8 (8 alternating sweeps) 61.6 -> 58.9 ms median,
// the step's GEMMs streaming slower than the benchmark's (gate_up 9.1 GB/s).
struct Prefetch {
  bool near = false;
  int64_t far0 = 0, far_end = 0;  // columns past the pass's kb, on each stream
  int64_t every = 1, nth = 0;
};

// T tokens x 4 rows of dot products over the pass's columns; the k % L columns left over are
// summed one by one after the vector loop.
template <int L, int T>
[[gnu::always_inline]] inline void tile(const float* x, int64_t k, const Pass p, const Out& o,
                                        const Prefetch& pf) {
  vec<L> acc[T][kRows] = {};
  int64_t j = p.kb;
  if (pf.near)
    for (; j + kLine <= p.ke; j += kLine) {
      for (int s = 0; s < kRows; ++s) __builtin_prefetch(p.w[s] + j + kPrefetch, 0, 3);
      for (int u = 0; u < kLine; u += L) fma_step<L, T>(acc, x, k, p, j + u);
    }
  else if (pf.far_end > pf.far0)
    for (int64_t f = p.kb + pf.far0 + pf.nth * kLine; j + kLine <= p.ke; j += kLine) {
      if (f < p.kb + pf.far_end)
        for (int s = 0; s < kRows; ++s) __builtin_prefetch(p.w[s] + f, 0, 2);
      f += pf.every * kLine;
      for (int u = 0; u < kLine; u += L) fma_step<L, T>(acc, x, k, p, j + u);
    }
  for (; j + L <= p.ke; j += L) fma_step<L, T>(acc, x, k, p, j);
  // Constant trip counts up to here, so that acc is fully unrolled into registers; indexing
  // it inside the variable-length tail loop would keep it on the stack (measured: 3x slower).
  float sums[T][kRows];
  for (int t = 0; t < T; ++t)
    for (int s = 0; s < kRows; ++s) sums[t][s] = sum(acc[t][s]);
  for (int t = 0; t < T; ++t)
    for (int s = 0; s < kRows; ++s) {
      for (int64_t c = j; c < p.ke; ++c) sums[t][s] += x[t * k + c] * p.w[s][c];
      float* yp = o.y + t * o.n + s * o.q;
      *yp = o.add ? *yp + sums[t][s] : sums[t][s];
    }
}

// The tile of `size` tokens (1..T), as a chain of constant sizes the compiler can unroll.
template <int L, int T>
[[gnu::always_inline]] inline void tile_of(int64_t size, const float* x, int64_t k, const Pass& p,
                                           const Out& o, const Prefetch& pf) {
  if (size == T) return tile<L, T>(x, k, p, o, pf);
  if constexpr (T > 1) tile_of<L, T - 1>(size, x, k, p, o, pf);
}

// Every token of one pass, in ceil(m / T) tiles as even as they go (m = 7, T = 6: 4 + 3, not
// 6 + 1): a 1-token tile has only 4 FMA chains, too few to hide the FMA latency once W is in
// L1. m = 1 is a single 1 x 4 tile: four FMA chains over four streams, bound by memory.
// The next pass's columns on each stream start where this pass's end (the quarter's rows are
// contiguous, and a row's next chunk follows it), so the far lines are [len, 2 len) past kb,
// less the first kPrefetch floats, which the next pass's first tile prefetches itself.
template <int L, int T>
[[gnu::always_inline]] inline void pass_tokens(const float* x, int64_t m, int64_t k, const Pass& p,
                                               Out o) {
  const int64_t tiles = (m + T - 1) / T, len = p.ke - p.kb;
  for (int64_t i = 0, t = 0; t < tiles; ++t) {
    const int64_t size = m / tiles + (t < m % tiles ? 1 : 0);
    Prefetch pf;
    pf.near = t == 0;
    pf.far0 = len + kPrefetch;
    pf.far_end = 2 * len;
    pf.every = tiles - 1;
    pf.nth = t - 1;
    tile_of<L, T>(size, x + i * k, k, p, o, pf);
    i += size;
    o.y += size * o.n;
  }
}

// The n % 4 rows left over after the quarters: one dot product per token and row.
[[gnu::always_inline]] inline void leftover_rows(const float* x, const float* w, float* y,
                                                 int64_t m, int64_t n, int64_t k, int64_t r0) {
  for (int64_t r = r0; r < n; ++r)
    for (int64_t i = 0; i < m; ++i) {
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t j = 0; j < k; ++j) acc += x[i * k + j] * w[r * k + j];
      y[i * n + r] = acc;
    }
}

// The whole GEMM with L-lane vectors and tiles of up to T tokens.
template <int L, int T>
[[gnu::always_inline]] inline void skinny(const float* x, const float* w, float* y, int64_t m,
                                          int64_t n, int64_t k) {
  const int64_t q = n / kRows;
  for (int64_t r = 0; r < q; ++r)
    for (int64_t kb = 0; kb == 0 || kb < k; kb += kChunk) {  // k = 0 still writes y = 0
      const Pass p{{w + r * k, w + (q + r) * k, w + (2 * q + r) * k, w + (3 * q + r) * k},
                   kb,
                   std::min(k, kb + kChunk)};
      pass_tokens<L, T>(x, m, k, p, Out{y + r, n, q, kb > 0});
    }
  leftover_rows(x, w, y, m, n, k, kRows * q);
}

// Tokens in lanes: x as xp[j][16 V] (token t in lane t % 16 of vector t / 16, zeros past m),
// so that V vector loads give every token's x[., j].
template <int V>
[[gnu::always_inline]] inline void pack_lanes(const float* x, int64_t m, int64_t k, float* xp) {
  for (int64_t j = 0; j < k; ++j)
    for (int64_t t = 0; t < V * 16; ++t) xp[j * V * 16 + t] = t < m ? x[t * k + j] : 0.0f;
}

// y[t, r] for one row r and every token: the n % 12 rows left over after the 12-row tiles.
template <int V>
[[gnu::always_inline]] inline void lane_row(const float* xp, const float* w, float* y, int64_t m,
                                            int64_t n, int64_t k, int64_t r) {
  vec<16> acc[V] = {};
  const float* wr = w + r * k;
  for (int64_t j = 0; j < k; ++j) {
    vec<16> xv[V];
    for (int v = 0; v < V; ++v) load<16>(xv[v], xp + (j * V + v) * 16);
    for (int v = 0; v < V; ++v) acc[v] += xv[v] * wr[j];
  }
  for (int v = 0; v < V; ++v)
    for (int l = 0; l < 16 && v * 16 + l < m; ++l) y[(v * 16 + l) * n + r] = acc[v][l];
}

// y[t, r0 + r] for 12 rows and every token: acc[r][v] += xp[j][v] * w[r0 + r][j] over all j.
// The rows go as three groups of four, each group one pointer that advances along its first
// row, the other three reached by index (k, 2k by scale, 3k): five registers for twelve
// rows. With a pointer per row they did not fit the sixteen general registers, and GCC
// reloaded five from the stack on every column; side by side (A/B driver, W in L2 and W
// streamed, m = 16) the change made the tile 1.3-1.45x faster.
template <int V>
[[gnu::always_inline]] inline void lane_tile12(const float* xp, const float* w, float* y, int64_t m,
                                               int64_t n, int64_t k, int64_t r0) {
  vec<16> acc[12][V] = {};
  const float* b0 = w + r0 * k;
  const float* b1 = b0 + 4 * k;
  const float* b2 = b0 + 8 * k;
  const int64_t k3 = 3 * k;
  for (int64_t j = 0; j < k; ++j, ++b0, ++b1, ++b2, xp += V * 16) {
    vec<16> xv[V];
    for (int v = 0; v < V; ++v) load<16>(xv[v], xp + v * 16);
    const float* g[3] = {b0, b1, b2};
#pragma GCC unroll 16
    for (int q = 0; q < 3; ++q) {
      const float s0 = g[q][0], s1 = g[q][k], s2 = g[q][2 * k], s3 = g[q][k3];
      for (int v = 0; v < V; ++v) {
        acc[4 * q][v] += xv[v] * s0;
        acc[4 * q + 1][v] += xv[v] * s1;
        acc[4 * q + 2][v] += xv[v] * s2;
        acc[4 * q + 3][v] += xv[v] * s3;
      }
    }
  }
  for (int v = 0; v < V; ++v)
    for (int l = 0; l < 16 && v * 16 + l < m; ++l)
      for (int r = 0; r < 12; ++r) y[(v * 16 + l) * n + r0 + r] = acc[r][v][l];
}

template <int V>
[[gnu::always_inline]] inline void lanes(const float* x, const float* w, float* y, int64_t m,
                                         int64_t n, int64_t k, float* xp) {
  pack_lanes<V>(x, m, k, xp);
  int64_t r0 = 0;
  for (; r0 + 12 <= n; r0 += 12) lane_tile12<V>(xp, w, y, m, n, k, r0);
  for (; r0 < n; ++r0) lane_row<V>(xp, w, y, m, n, k, r0);
}

}  // namespace

std::size_t skinny_gemm_scratch_floats(int64_t m, int64_t k) {
  return m > kLanesFrom ? static_cast<std::size_t>(32 * k) : 0;
}

TPB_CLONES void skinny_gemm_generic(const float* x, const float* w, float* y, int64_t m, int64_t n,
                                    int64_t k, std::vector<float>& scratch) {
  (void)scratch;
  skinny<8, 3>(x, w, y, m, n, k);
}

#if defined(TPB_HAVE_V4)
TPB_TARGET_V4 void skinny_gemm_avx512(const float* x, const float* w, float* y, int64_t m,
                                      int64_t n, int64_t k, std::vector<float>& scratch) {
  if (m <= kLanesFrom || m > 32) return skinny<16, 6>(x, w, y, m, n, k);
  if (scratch.size() < skinny_gemm_scratch_floats(m, k))
    scratch.resize(skinny_gemm_scratch_floats(m, k));
  if (m <= 16) return lanes<1>(x, w, y, m, n, k, scratch.data());
  lanes<2>(x, w, y, m, n, k, scratch.data());
}
#else
void skinny_gemm_avx512(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                        std::vector<float>& scratch) {
  skinny_gemm_generic(x, w, y, m, n, k, scratch);
}
#endif

bool skinny_gemm_has_avx512() {
  return cpu_has_x86_64_v4();
}

void skinny_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
                 std::vector<float>& scratch) {
  if (skinny_gemm_has_avx512()) return skinny_gemm_avx512(x, w, y, m, n, k, scratch);
  skinny_gemm_generic(x, w, y, m, n, k, scratch);
}

}  // namespace tpb
