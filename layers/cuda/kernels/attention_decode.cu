// Decode attention (flash-decoding). One block per (split, KV head, sequence) scores every
// query head of its GQA group against its chunk of cached positions, so each K and V element
// is read from memory once; with several splits a combine kernel merges the partial softmax
// states (max m, sum l, unnormalised accumulators) as softmax = sum_s acc_s e^(m_s - M) / L.
//
// Loads are 16 bytes (8 bf16/fp16 or 4 fp32 elements per lane): a row of head_dim elements is
// kLpr lanes wide, so a warp covers kRpw rows per load and kUnroll loads are in flight at once
// (2 KiB per warp). The next rows are loaded into registers before the math on the current
// ones (register double buffering), in the QK pass and in the PV pass alike.
//
// The same block body reads two cache layouts: run's slot cache (a sequence's positions in one
// contiguous run) and serve's paged cache (position p in block table[p / block_tokens]), so a
// serving step whose sequences all decode one token runs this kernel, not the varlen one.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

constexpr int kHeadChunk = 8;  // query heads accumulated at once in the PV pass (registers)

constexpr int pow2_at_least(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// How a warp's lanes cover rows of D elements of T with 16-byte vectors.
template <class T, int D>
struct RowLanes {
  static constexpr int kEpv = 16 / static_cast<int>(sizeof(T));  // elements per vector
  static constexpr int kVpr = D / kEpv;                          // vectors per row
  static constexpr int kLpr = kVpr >= 32 ? 32 : pow2_at_least(kVpr);
  static constexpr int kVpl = (kVpr + kLpr - 1) / kLpr;  // vectors per lane
  static constexpr int kRpw = 32 / kLpr;                 // rows per warp per load
  static constexpr int kUnroll = kVpl == 1 ? 4 : 2;      // loads in flight per lane
  static constexpr int kDpl = kVpl * kEpv;               // dimensions per lane
  static constexpr int kRowsPerWarp = kUnroll * kRpw;
  static_assert(D % kEpv == 0 && kDpl <= 8, "head_dim: a multiple of 32 up to 256");
};

// Where row p of a block's chunk starts. Slot cache: the chunk's rows are `stride` apart.
template <class T>
struct StridedRows {
  const T* base;  // the chunk's first row, at this block's KV head
  int64_t stride;
  __device__ __forceinline__ const T* at(int p) const { return base + p * stride; }
};

// Paged cache: chunk row p is position p0 + p of the sequence, in block table[pos / bt].
template <class T>
struct PagedRows {
  const T* cache;  // the cache at this block's KV head
  const int32_t* table;
  int64_t stride;  // elements per cache position
  int p0, bt;
  __device__ __forceinline__ const T* at(int p) const {
    const int pos = p0 + p;
    return cache + (static_cast<int64_t>(__ldg(table + pos / bt)) * bt + pos % bt) * stride;
  }
};

// The kUnroll rows of this lane in one iteration (row0 + u * rstep), 16 bytes per vector; rows
// at or past n and vectors past the row's end read as zero (and are not addressed).
template <class T, int D, class Rows>
__device__ __forceinline__ void load_rows(
    uint4 (&buf)[RowLanes<T, D>::kUnroll][RowLanes<T, D>::kVpl], const Rows& rows, int row0,
    int rstep, int n, int col) {
  using L = RowLanes<T, D>;
#pragma unroll
  for (int u = 0; u < L::kUnroll; ++u) {
    const int p = row0 + u * rstep;
#pragma unroll
    for (int i = 0; i < L::kVpl; ++i) {
      const int c = col + L::kLpr * i;
      buf[u][i] = p < n && c < L::kVpr
                      ? __ldg(reinterpret_cast<const uint4*>(rows.at(p) + c * L::kEpv))
                      : make_uint4(0, 0, 0, 0);
    }
  }
}

template <class T, int D>
__device__ __forceinline__ void unpack_rows(
    const uint4 (&buf)[RowLanes<T, D>::kUnroll][RowLanes<T, D>::kVpl],
    float (&f)[RowLanes<T, D>::kUnroll][RowLanes<T, D>::kDpl]) {
  using L = RowLanes<T, D>;
#pragma unroll
  for (int u = 0; u < L::kUnroll; ++u)
#pragma unroll
    for (int i = 0; i < L::kVpl; ++i) {
      const T* e = reinterpret_cast<const T*>(&buf[u][i]);
#pragma unroll
      for (int x = 0; x < L::kEpv; ++x) f[u][i * L::kEpv + x] = to_f(e[x]);
    }
}

// The block's position slots: lane row `sub` of warp w covers rows w*kRpw + sub + it*step + u*
// (nwarps*kRpw), so one load of a warp reads kRpw whole rows.
struct Slots {
  int row0, rstep, step, col;
};
template <class T, int D>
__device__ __forceinline__ Slots slots(int warp, int lane, int nwarps) {
  using L = RowLanes<T, D>;
  return Slots{warp * L::kRpw + lane / L::kLpr, nwarps * L::kRpw, nwarps * L::kRowsPerWarp,
               lane % L::kLpr};
}

// This lane's walk over a chunk's n rows (K in the QK pass, V in the PV pass), kUnroll rows an
// iteration: body(it, s, f) computes on iteration it's rows f while the next iteration's rows
// load into registers.
template <class T, int D, class Rows, class Body>
__device__ __forceinline__ void walk_rows(const Rows& rows, int n, Body&& body) {
  using L = RowLanes<T, D>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const Slots s = slots<T, D>(warp, lane, blockDim.x / 32);
  uint4 buf[L::kUnroll][L::kVpl];
  load_rows<T, D>(buf, rows, s.row0, s.rstep, n, s.col);
  for (int it = 0; it < n; it += s.step) {
    float f[L::kUnroll][L::kDpl];
    unpack_rows<T, D>(buf, f);
    if (it + s.step < n)  // the next rows fly while this iteration computes
      load_rows<T, D>(buf, rows, it + s.step + s.row0, s.rstep, n, s.col);
    body(it, s, f);
  }
}

// Scores sc[h][p] = q_h . k_p (q pre-scaled) for the chunk's n positions.
template <class T, int D, class Rows>
__device__ void score_pass(const Rows& krows, const float* qs, float* sc, int g, int n,
                           int64_t chunk) {
  using L = RowLanes<T, D>;
  const auto score_rows = [&](int it, const Slots& s, const float(&kf)[L::kUnroll][L::kDpl]) {
    for (int h = 0; h < g; ++h) {
      float q[L::kDpl];
#pragma unroll
      for (int i = 0; i < L::kVpl; ++i)
#pragma unroll
        for (int x = 0; x < L::kEpv; ++x) {
          const int c = s.col + L::kLpr * i;
          q[i * L::kEpv + x] = c < L::kVpr ? qs[h * D + c * L::kEpv + x] : 0.f;
        }
#pragma unroll
      for (int u = 0; u < L::kUnroll; ++u) {
        float d = 0.f;
#pragma unroll
        for (int x = 0; x < L::kDpl; ++x) d += q[x] * kf[u][x];
#pragma unroll
        for (int o = L::kLpr / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        const int p = it + s.row0 + u * s.rstep;
        if (s.col == 0 && p < n) sc[h * chunk + p] = d;
      }
    }
  };
  walk_rows<T, D>(krows, n, score_rows);
}

// Softmax over a block's chunk of n positions, a warp per head; probabilities overwrite the
// scores sc[h][p], and stats[h] = {chunk max, sum of exponentials} for the combine step.
__device__ __forceinline__ void chunk_softmax(float* sc, float* stats, int g, int n, int64_t chunk,
                                              int warp, int lane, int nwarps) {
  for (int h = warp; h < g; h += nwarps) {
    float* row = sc + h * chunk;
    const float m = warp_row_max(row, n, lane);
    const float l = warp_exp_sum(row, n, m, lane);
    if (lane == 0) {
      stats[2 * h] = m;
      stats[2 * h + 1] = l;
    }
  }
}

// Accumulators of heads h0 .. h0+hn-1 over this lane's rows: acc[h][x] += p[h][row] v[row][x].
template <class T, int D, class Rows>
__device__ void value_pass(const Rows& vrows, const float* sc, int h0, int hn, int n, int64_t chunk,
                           float (&acc)[kHeadChunk][RowLanes<T, D>::kDpl]) {
  using L = RowLanes<T, D>;
  const auto accumulate_rows = [&](int it, const Slots& s, const float(&vf)[L::kUnroll][L::kDpl]) {
#pragma unroll
    for (int u = 0; u < L::kUnroll; ++u) {
      const int p = it + s.row0 + u * s.rstep;
      if (p >= n) continue;
#pragma unroll
      for (int h = 0; h < kHeadChunk; ++h) {
        if (h >= hn) break;
        const float pr = sc[(h0 + h) * chunk + p];
#pragma unroll
        for (int x = 0; x < L::kDpl; ++x) acc[h][x] += pr * vf[u][x];
      }
    }
  };
  walk_rows<T, D>(vrows, n, accumulate_rows);
}

// Sums the lanes' accumulators of heads hc .. hc+hn-1 into red[h][e] (shuffles across the
// warp's rows of one column, then the warps add in turn: deterministic), then writes the
// output (one split) or the partial records. bh0: the group's first (sequence, head) row.
template <class T, int D>
__device__ void finish_heads(float (&acc)[kHeadChunk][RowLanes<T, D>::kDpl], float* red,
                             const float* stats, T* out, float* partials, int64_t bh0, int hc,
                             int hn, int64_t split, int64_t splits) {
  using L = RowLanes<T, D>;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
#pragma unroll
  for (int h = 0; h < kHeadChunk; ++h)
#pragma unroll
    for (int x = 0; x < L::kDpl; ++x)
#pragma unroll
      for (int o = L::kLpr; o < 32; o <<= 1)
        acc[h][x] += __shfl_xor_sync(0xffffffffu, acc[h][x], o);
  for (int w = 0; w < nwarps; ++w) {
    if (warp == w && lane < L::kLpr) {
#pragma unroll
      for (int h = 0; h < kHeadChunk; ++h) {
        if (h >= hn) break;
#pragma unroll
        for (int i = 0; i < L::kVpl; ++i) {
          const int c = lane + L::kLpr * i;
          if (c >= L::kVpr) continue;
#pragma unroll
          for (int x = 0; x < L::kEpv; ++x) {
            float& r = red[h * D + c * L::kEpv + x];
            r = (w == 0 ? 0.f : r) + acc[h][i * L::kEpv + x];
          }
        }
      }
    }
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < hn * D; idx += blockDim.x) {
    const int h = idx / D, e = idx % D;
    const int64_t bh = bh0 + hc + h;
    const float a = red[idx];
    if (splits == 1) {
      out[bh * D + e] = from_f<T>(a / stats[2 * (hc + h) + 1]);
    } else {
      float* part = partials + (bh * splits + split) * (D + 2);
      part[e] = a;
      if (e == 0) {
        part[D] = stats[2 * (hc + h)];
        part[D + 1] = stats[2 * (hc + h) + 1];
      }
    }
  }
  __syncthreads();  // red is reused by the next chunk of heads
}

// The packed step's arrays a paged decode block reads (varlen_plan.h's VarlenMeta offsets).
struct PagedMeta {
  const int32_t *token_seq, *token_pos, *seq_table0, *tables;
};

// What both decode kernels take: the step's tensors and the plan's split of the positions.
template <class T>
struct DecodeArgs {
  const T *qkv, *k_cache, *v_cache;
  T* out;
  float* partials;
  int64_t chunk, splits;
  int q_heads, kv_heads;
  float scale;
};

// One block's work: query heads kh * g .. kh * g + g - 1 of sequence row b (qkv row b, output
// rows b * q_heads + kh * g ...) against the n positions of its split `split`, K and V rows
// found by `krows` and `vrows`. n may be 0 (a split past a short sequence's end): the block
// writes an empty state.
template <class T, int D, class Rows>
__device__ __forceinline__ void decode_block(const DecodeArgs<T>& a, const Rows& krows,
                                             const Rows& vrows, int64_t b, int kh, int n,
                                             int64_t split) {
  extern __shared__ float smem[];
  const int g = a.q_heads / a.kv_heads, h0 = kh * g;
  float* qs = smem;                 // [g][D], pre-scaled by 1/sqrt(D); then the PV sums
  float* sc = qs + g * D;           // [g][chunk]: scores, then probabilities
  float* stats = sc + g * a.chunk;  // [g][2]: chunk max and sum of exponentials

  const int64_t row_stride = static_cast<int64_t>(a.q_heads + 2 * a.kv_heads) * D;
  const T* q = a.qkv + b * row_stride + static_cast<int64_t>(h0) * D;  // g heads, contiguous
  for (int i = threadIdx.x; i < g * D; i += blockDim.x) qs[i] = to_f(q[i]) * a.scale;
  __syncthreads();

  score_pass<T, D>(krows, qs, sc, g, n, a.chunk);
  __syncthreads();
  chunk_softmax(sc, stats, g, n, a.chunk, threadIdx.x / 32, threadIdx.x % 32, blockDim.x / 32);
  __syncthreads();

  // P V, kHeadChunk heads at a time (V re-read from L1/L2 for groups beyond 8); the queries
  // are no longer needed, so their shared memory (g*D floats) holds the cross-warp sums.
  for (int hc = 0; hc < g; hc += kHeadChunk) {
    const int hn = min(kHeadChunk, g - hc);
    float acc[kHeadChunk][RowLanes<T, D>::kDpl] = {};
    value_pass<T, D>(vrows, sc, hc, hn, n, a.chunk, acc);
    finish_heads<T, D>(acc, qs, stats, a.out, a.partials, b * a.q_heads + h0, hc, hn, split,
                       a.splits);
  }
}

// At most 128 registers (4 blocks of 128 threads per SM, the plan's kDecodeBlocksPerSm):
// ptxas fits every (T, D) in that without spills. Grid: (split, KV head, sequence).
template <class T, int D>
__global__ void __launch_bounds__(kDecodeThreads, kDecodeBlocksPerSm)
    attention_decode_kernel(DecodeArgs<T> a, int64_t ctx_len, int64_t max_ctx) {
  const int64_t b = blockIdx.z, p0 = blockIdx.x * a.chunk;
  const int64_t pos_stride = static_cast<int64_t>(a.kv_heads) * D;
  const int64_t first = (b * max_ctx + p0) * pos_stride + static_cast<int64_t>(blockIdx.y) * D;
  decode_block<T, D>(a, StridedRows<T>{a.k_cache + first, pos_stride},
                     StridedRows<T>{a.v_cache + first, pos_stride}, b, blockIdx.y,
                     static_cast<int>(min(a.chunk, ctx_len - p0)), blockIdx.x);
}

// A decode-only serving step: sequence row b (one new token each, rows in sequence order) at
// its own length token_pos[b] + 1, over the paged cache through its block table.
template <class T, int D>
__global__ void __launch_bounds__(kDecodeThreads, kDecodeBlocksPerSm)
    attention_decode_paged_kernel(DecodeArgs<T> a, PagedMeta m, int block_tokens) {
  const int64_t b = blockIdx.z;
  const int p0 = static_cast<int>(blockIdx.x * a.chunk);
  const int32_t* table = m.tables + m.seq_table0[m.token_seq[b]];
  const int64_t pos_stride = static_cast<int64_t>(a.kv_heads) * D;
  const int64_t head = static_cast<int64_t>(blockIdx.y) * D;
  decode_block<T, D>(a, PagedRows<T>{a.k_cache + head, table, pos_stride, p0, block_tokens},
                     PagedRows<T>{a.v_cache + head, table, pos_stride, p0, block_tokens}, b,
                     blockIdx.y, max(0, min(static_cast<int>(a.chunk), m.token_pos[b] + 1 - p0)),
                     blockIdx.x);
}

// One block per (row, query head); partial record s is [acc(head_dim), m, l]. A record of an
// empty split (max -inf, sum 0) adds nothing; split 0 is never empty, so big_m is finite.
template <class T>
__global__ void attention_combine_kernel(const float* partials, T* out, int64_t splits,
                                         int head_dim) {
  const int64_t bh = blockIdx.x;
  const int64_t rec = head_dim + 2;
  const float* part = partials + bh * splits * rec;
  float big_m = -INFINITY;
  for (int64_t s = 0; s < splits; ++s) big_m = fmaxf(big_m, part[s * rec + head_dim]);
  float big_l = 0.f;
  for (int64_t s = 0; s < splits; ++s)
    big_l += part[s * rec + head_dim + 1] * expf(part[s * rec + head_dim] - big_m);
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float acc = 0.f;
    for (int64_t s = 0; s < splits; ++s)
      acc += part[s * rec + e] * expf(part[s * rec + head_dim] - big_m);
    out[bh * head_dim + e] = from_f<T>(acc / big_l);
  }
}

// Shared memory past the default 48 KiB is opted into (sm_80+).
template <class Kernel>
void allow_smem(Kernel* kernel, int64_t bytes) {
  if (bytes > 48 * 1024)
    TPB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

// Calls f(std::integral_constant<int, D>) for head_dim D, so each lane's share of a row is known
// at compile time.
template <int D = 32, class F>
void dispatch_head_dim(int64_t head_dim, F&& f) {
  if constexpr (D > 256) {
    throw BadInput("attention: unsupported head_dim " + std::to_string(head_dim));
  } else {
    if (head_dim != D) return dispatch_head_dim<D + 32>(head_dim, f);
    f(std::integral_constant<int, D>{});
  }
}

}  // namespace

namespace {

// Launches `kernel` (a decode kernel for T and D) with plan `p`'s main launch on stream `s`,
// its arguments the common DecodeArgs then `rest`, and then the combine where there are splits.
template <class T, int D, class Plan, class... Rest>
void launch_decode(void (*kernel)(DecodeArgs<T>, Rest...), const Plan& p, cudaStream_t s,
                   const void* qkv, const void* k_cache, const void* v_cache, void* out,
                   float* partials, const AttnShape& a, Rest... rest) {
  const DecodeArgs<T> args{static_cast<const T*>(qkv),
                           static_cast<const T*>(k_cache),
                           static_cast<const T*>(v_cache),
                           static_cast<T*>(out),
                           partials,
                           p.chunk,
                           p.splits,
                           static_cast<int>(a.q_heads),
                           static_cast<int>(a.kv_heads),
                           1.0f / std::sqrt(static_cast<float>(D))};
  allow_smem(kernel, p.main.smem_bytes);
  kernel<<<to_dim3(p.main.grid), to_dim3(p.main.block), static_cast<size_t>(p.main.smem_bytes),
           s>>>(args, rest...);
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

// K and V rows must be 16-byte aligned (cache base from cudaMalloc; head_dim * bytes % 16 == 0).
void launch_attention_decode(const DecodePlan& p, cudaStream_t s, const void* qkv,
                             const void* k_cache, const void* v_cache, void* out, float* partials,
                             int64_t ctx_len, const AttnShape& a, DType t) {
  dispatch_dtype(t, "attention_decode", [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(a.head_dim, [&](auto d) {
      constexpr int D = decltype(d)::value;
      launch_decode<T, D>(attention_decode_kernel<T, D>, p, s, qkv, k_cache, v_cache, out, partials,
                          a, ctx_len, a.max_ctx);
    });
  });
  if (p.splits > 1) launch_attention_combine(p.combine, s, partials, out, p.splits, a.head_dim, t);
}

void launch_attention_decode_paged(const VarlenAttnPlan& p, cudaStream_t s, const void* qkv,
                                   const void* k_cache, const void* v_cache, void* out,
                                   float* partials, const int32_t* meta, const VarlenMeta& m,
                                   const AttnShape& a, DType t) {
  const PagedMeta pm{meta + m.token_seq, meta + m.token_pos, meta + m.seq_table0, meta + m.tables};
  dispatch_dtype(t, "attention_decode", [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(a.head_dim, [&](auto d) {
      constexpr int D = decltype(d)::value;
      launch_decode<T, D>(attention_decode_paged_kernel<T, D>, p, s, qkv, k_cache, v_cache, out,
                          partials, a, pm, static_cast<int>(m.block_tokens));
    });
  });
  if (p.splits > 1) launch_attention_combine(p.combine, s, partials, out, p.splits, a.head_dim, t);
}

void launch_attention_combine(const KernelLaunch& k, cudaStream_t s, const float* partials,
                              void* out, int64_t splits, int64_t head_dim, DType t) {
  dispatch_dtype(t, "attention", [&](auto tag) {
    using T = decltype(tag);
    attention_combine_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
        partials, static_cast<T*>(out), splits, static_cast<int>(head_dim));
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
