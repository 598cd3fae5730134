// y = x * W^T for decode's few tokens, with W streamed from memory once per call whatever m is.
//
// A pass takes four rows of W, one from each quarter (r, q + r, 2q + r, 3q + r; q = n / 4), so
// that W is read as four long sequential streams. Four adjacent rows instead make four
// streams only k floats long that all restart together; with k = 1024 each is one 4 KiB page
// and the hardware prefetchers retrain on every pass. Side by side (fp32, 1 thread, 8 layers'
// worth of W, m = 1, medians): 8192x1024 13.8 -> 19.7 GB/s, 2048x1024 14.4 -> 19.7.
//
// Within a pass the tokens go three at a time through a register tile: 3 tokens x 4 rows of
// accumulators plus the 4 W vectors fill AVX2's 16 registers, and each W vector loaded feeds
// 3 FMAs instead of 1. The pass covers at most kChunk columns, so that its 4 rows of W (16 KiB)
// stay in L1 while every token tile reads them: W comes from memory on the first tile and
// from L1 on the others, and x (m x kChunk floats) from L2. Looping tokens outside the columns
// instead (one token's dot products at a time) re-read W from cache per token and grew the
// step time nearly linearly with the batch.
#include "layers/cpu/skinny_gemm.h"

#include <algorithm>

#include "layers/cpu/target_clones.h"

namespace tpb {

namespace {

// Eight floats as a GCC/Clang vector: one AVX2 register in the x86-64-v3 clone, two SSE
// registers in the default one. f32x8u is the unaligned, aliasing view used to load it, as
// GCC's <immintrin.h> defines __m256_u. Helpers take vectors by reference and are always
// inlined, so each clone compiles them for its own ISA and no vector crosses a call (-Wpsabi).
using f32x8 = float __attribute__((vector_size(32)));
using f32x8u = float __attribute__((vector_size(32), aligned(4), may_alias));

constexpr int kRows = 4;          // rows of W per pass, one per quarter
constexpr int kTile = 3;          // tokens per register tile (3 x 4 accumulators + 4 W vectors)
constexpr int64_t kChunk = 1024;  // columns per pass: 4 rows x 4 KiB of W stay in L1
// How far ahead of the loads each W stream is prefetched, in floats (1 KiB). The out-of-order
// window alone keeps fewer lines in flight the more FMAs there are per byte, so without it
// the stream rate fell as m grew (m = 1/2/4: 13.4/12.3/9.6 GB/s without, 15.8/15.9/13.0
// with; 128 to 384 floats all within 3%, prefetchnta 3x slower). Past the end of a row the
// address is the quarter's next row, which the next pass reads; prefetches never fault.
constexpr int64_t kPrefetch = 256;

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

// at8 returns an AVX vector from a function compiled also for the baseline clone; it is always
// inlined, so the ABI change -Wpsabi warns of never applies.
#pragma GCC diagnostic ignored "-Wpsabi"
// A value, not a reference: clang keeps a vector type's 32-byte alignment on a reference even
// through an aligned(4) typedef (UBSan: misaligned reference), and a fixed-size memcpy into one
// vector compiles to the same single unaligned load.
[[gnu::always_inline]] inline f32x8 at8(const float* p) {
  f32x8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

[[gnu::always_inline]] inline float sum8(const f32x8& v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

// acc[t][s] += x[t][j, j + 8) * w_s[j, j + 8) for the T tokens and the pass's four rows.
// The pass comes by value and the loads are plain expressions: loading through memcpy into
// an array of vectors kept the W rows on the stack, a store-forwarding stall per load
// (measured: 4x slower at m = 32).
template <int T>
[[gnu::always_inline]] inline void fma8(f32x8 (&acc)[T][kRows], const float* x, int64_t k,
                                        const Pass p, int64_t j) {
  const f32x8 w0 = at8(p.w[0] + j), w1 = at8(p.w[1] + j), w2 = at8(p.w[2] + j),
              w3 = at8(p.w[3] + j);
  for (int t = 0; t < T; ++t) {
    const f32x8 xv = at8(x + t * k + j);
    acc[t][0] += xv * w0;
    acc[t][1] += xv * w1;
    acc[t][2] += xv * w2;
    acc[t][3] += xv * w3;
  }
}

// T tokens x 4 rows of dot products over the pass's columns; the k % 8 columns left over are
// summed one by one after the vector loop. The first tile of a pass, the one that brings W
// from memory, also prefetches each stream kPrefetch floats ahead, one line per 16 columns.
template <int T>
[[gnu::always_inline]] inline void tile(const float* x, int64_t k, const Pass p, const Out& o,
                                        bool prefetch) {
  f32x8 acc[T][kRows] = {};
  int64_t j = p.kb;
  if (prefetch)
    for (; j + 16 <= p.ke; j += 16) {
      for (int s = 0; s < kRows; ++s) __builtin_prefetch(p.w[s] + j + kPrefetch, 0, 3);
      fma8<T>(acc, x, k, p, j);
      fma8<T>(acc, x, k, p, j + 8);
    }
  for (; j + 8 <= p.ke; j += 8) fma8<T>(acc, x, k, p, j);
  // Constant trip counts up to here, so that acc is fully unrolled into registers; indexing
  // it inside the variable-length tail loop would keep it on the stack (measured: 3x slower).
  float sums[T][kRows];
  for (int t = 0; t < T; ++t)
    for (int s = 0; s < kRows; ++s) sums[t][s] = sum8(acc[t][s]);
  for (int t = 0; t < T; ++t)
    for (int s = 0; s < kRows; ++s) {
      for (int64_t c = j; c < p.ke; ++c) sums[t][s] += x[t * k + c] * p.w[s][c];
      float* yp = o.y + t * o.n + s * o.q;
      *yp = o.add ? *yp + sums[t][s] : sums[t][s];
    }
}

// Every token of one pass, in tiles of kTile and then of 2 and 1 for the m % kTile left.
// m = 1 is a single 1 x 4 tile: four FMA chains over four streams, as before the tiles.
[[gnu::always_inline]] inline void pass_tokens(const float* x, int64_t m, int64_t k, const Pass& p,
                                               Out o) {
  int64_t i = 0;
  for (; i + kTile <= m; i += kTile, o.y += kTile * o.n) tile<kTile>(x + i * k, k, p, o, i == 0);
  for (; i + 2 <= m; i += 2, o.y += 2 * o.n) tile<2>(x + i * k, k, p, o, i == 0);
  if (i < m) tile<1>(x + i * k, k, p, o, i == 0);
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

}  // namespace

TPB_CLONES void skinny_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n,
                            int64_t k) {
  const int64_t q = n / kRows;
  for (int64_t r = 0; r < q; ++r)
    for (int64_t kb = 0; kb == 0 || kb < k; kb += kChunk) {  // k = 0 still writes y = 0
      const Pass p{{w + r * k, w + (q + r) * k, w + (2 * q + r) * k, w + (3 * q + r) * k},
                   kb,
                   std::min(k, kb + kChunk)};
      pass_tokens(x, m, k, p, Out{y + r, n, q, kb > 0});
    }
  leftover_rows(x, w, y, m, n, k, kRows * q);
}

}  // namespace tpb
