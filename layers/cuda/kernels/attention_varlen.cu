// The mixed step's position-dependent ops over a paged KV cache (layers/step_batch.h): rope at
// each token's own position, K and V written through its sequence's block table, and causal
// attention of each new token over positions [0, its position]. The int32 arrays of
// VarlenMeta (varlen_plan.h) say which sequence and position each row is.
//
// Attention: one block per (new token, KV head, split) holds the token's g query heads and
// streams its split's positions in tiles with an online softmax (running max m and sum l per
// head; the accumulators are rescaled by e^(m_old - m_new) when the max grows). With more than
// one split (few tokens: decode rows) each block writes its partial state and the combine
// kernel of attention_decode.cu merges them. The tokens of one prefill chunk each stream their
// sequence's K and V, so a chunk re-reads them through L2; the cost model counts them once per
// sequence. CUDA cores, fp32 math: a tensor-core version belongs with the prefill kernel's.
#include <cmath>

#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

constexpr int kMaxLaneElems = 8;  // head_dim <= 256: up to 8 elements of a K row per lane

// The cache row of position `pos` of the sequence whose block table is `table`.
__device__ __forceinline__ int64_t cache_slot(const int32_t* table, int pos, int block_tokens) {
  return static_cast<int64_t>(table[pos / block_tokens]) * block_tokens + pos % block_tokens;
}

template <class T>
__global__ void rope_varlen_kernel(T* qkv, const int32_t* token_pos, int64_t tokens,
                                   int64_t rot_heads, int64_t row_stride, int64_t head_dim,
                                   float theta) {
  const int64_t half = head_dim / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * rot_heads * half) return;
  const int64_t i = idx % half;
  const int64_t head = (idx / half) % rot_heads;  // q heads first, then k heads: contiguous
  const int64_t tok = idx / (half * rot_heads);
  rope_pair(qkv + tok * row_stride + head * head_dim, i, half, static_cast<float>(token_pos[tok]),
            head_dim, theta);
}

template <class T>
__global__ void kv_write_varlen_kernel(const T* qkv, T* k_cache, T* v_cache,
                                       const int32_t* token_seq, const int32_t* token_pos,
                                       const int32_t* seq_table0, const int32_t* tables,
                                       int64_t tokens, int block_tokens, int64_t q_heads,
                                       int64_t kv_heads, int64_t head_dim) {
  const int64_t width = kv_heads * head_dim;  // one token's k (or v)
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * width) return;
  const int64_t tok = idx / width;
  const int64_t e = idx % width;
  const int32_t* table = tables + seq_table0[token_seq[tok]];
  const int64_t dst = cache_slot(table, token_pos[tok], block_tokens) * width + e;
  const T* row = qkv + tok * (q_heads + 2 * kv_heads) * head_dim;
  k_cache[dst] = row[q_heads * head_dim + e];
  v_cache[dst] = row[(q_heads + kv_heads) * head_dim + e];
}

struct VarlenPtrs {
  const int32_t *token_seq, *token_pos, *seq_table0, *tables;
};

VarlenPtrs ptrs(const int32_t* meta, const VarlenMeta& m) {
  return {meta + m.token_seq, meta + m.token_pos, meta + m.seq_table0, meta + m.tables};
}

// Scores of one tile: a warp per position holds its K row in registers and dots it with the
// g queries; lane 0 also keeps the position's cache row for the PV pass.
template <class T>
__device__ __forceinline__ void tile_scores(const T* k_cache, const float* qs, float* sc,
                                            int64_t* slots, const int32_t* table, int p0, int n,
                                            int g, int head_dim, int64_t kv_width, int kh,
                                            int block_tokens) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  const int epl = head_dim / 32;
  for (int p = warp; p < n; p += nwarps) {
    const int64_t slot = cache_slot(table, p0 + p, block_tokens);
    const T* krow = k_cache + slot * kv_width + static_cast<int64_t>(kh) * head_dim;
    float kr[kMaxLaneElems];
#pragma unroll
    for (int i = 0; i < kMaxLaneElems; ++i) kr[i] = i < epl ? to_f(krow[lane + 32 * i]) : 0.f;
    for (int h = 0; h < g; ++h) {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < kMaxLaneElems; ++i)
        if (i < epl) s += qs[h * head_dim + lane + 32 * i] * kr[i];
      s = warp_sum(s);
      if (lane == 0) sc[h * kVarlenTile + p] = s;
    }
    if (lane == 0) slots[p] = slot;
  }
}

// The online softmax over one tile, a warp per head: scores become e^(s - m_new), the head's
// accumulators are rescaled by e^(m_old - m_new) and its running sum updated.
__device__ __forceinline__ void tile_softmax(float* sc, float* acc, float* st, int n, int g,
                                             int head_dim) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  for (int h = warp; h < g; h += nwarps) {
    float* row = sc + h * kVarlenTile;
    const float mx = warp_row_max(row, n, lane);
    const float m_old = st[2 * h], m_new = fmaxf(m_old, mx);
    const float corr = expf(m_old - m_new);  // 0 on the first tile (m_old = -inf)
    const float l = warp_exp_sum(row, n, m_new, lane);
    for (int i = lane; i < head_dim; i += 32) acc[h * head_dim + i] *= corr;
    if (lane == 0) {
      st[2 * h] = m_new;
      st[2 * h + 1] = st[2 * h + 1] * corr + l;
    }
  }
}

// The block's result: the normalised output (one split), or its partial state [acc, m, l] per
// query head, the record layout of attention_combine_kernel.
template <class T>
__device__ __forceinline__ void varlen_finish(const float* acc, const float* st, T* out,
                                              float* partials, int64_t tok, int h0, int g,
                                              int q_heads, int head_dim, int split, int splits) {
  if (splits == 1) {
    T* o =
        out + tok * static_cast<int64_t>(q_heads) * head_dim + static_cast<int64_t>(h0) * head_dim;
    for (int idx = threadIdx.x; idx < g * head_dim; idx += blockDim.x)
      o[idx] = from_f<T>(acc[idx] / st[2 * (idx / head_dim) + 1]);
    return;
  }
  for (int idx = threadIdx.x; idx < g * head_dim; idx += blockDim.x) {
    const int h = idx / head_dim, e = idx % head_dim;
    const int64_t bh = tok * q_heads + h0 + h;
    float* part = partials + (bh * splits + split) * (head_dim + 2);
    part[e] = acc[idx];
    if (e == 0) part[head_dim] = st[2 * h], part[head_dim + 1] = st[2 * h + 1];
  }
}

template <class T>
__global__ void __launch_bounds__(kVarlenThreads)
    attention_varlen_kernel(const T* qkv, const T* k_cache, const T* v_cache, T* out,
                            float* partials, VarlenPtrs mp, int block_tokens, int q_heads,
                            int kv_heads, int head_dim, int chunk, int splits, float scale) {
  extern __shared__ float smem[];
  __shared__ int64_t slots[kVarlenTile];
  const int g = q_heads / kv_heads;
  const int64_t tok = blockIdx.x;
  const int kh = blockIdx.y;
  const int split = blockIdx.z;
  const int h0 = kh * g;  // first query head of this KV head's group
  const int32_t* table = mp.tables + mp.seq_table0[mp.token_seq[tok]];
  const int len = mp.token_pos[tok] + 1;  // causal: positions 0 .. its own
  // This split's positions; empty past a short sequence's end (its state stays m = -inf, l = 0).
  const int p_begin = split * chunk, p_end = min(len, p_begin + chunk);
  float* qs = smem;                  // [g][head_dim], pre-scaled by 1/sqrt(head_dim)
  float* acc = qs + g * head_dim;    // [g][head_dim], unnormalised
  float* sc = acc + g * head_dim;    // [g][kVarlenTile]: scores, then e^(s - m)
  float* st = sc + g * kVarlenTile;  // [g][2]: running max and sum

  const int64_t row_stride = static_cast<int64_t>(q_heads + 2 * kv_heads) * head_dim;
  const T* q = qkv + tok * row_stride + static_cast<int64_t>(h0) * head_dim;
  for (int i = threadIdx.x; i < g * head_dim; i += blockDim.x) {
    qs[i] = to_f(q[i]) * scale;
    acc[i] = 0.f;
  }
  for (int h = threadIdx.x; h < g; h += blockDim.x) {
    st[2 * h] = -INFINITY;
    st[2 * h + 1] = 0.f;
  }
  __syncthreads();
  const int64_t kv_width = static_cast<int64_t>(kv_heads) * head_dim;
  for (int p0 = p_begin; p0 < p_end; p0 += kVarlenTile) {
    const int n = min(kVarlenTile, p_end - p0);
    tile_scores(k_cache, qs, sc, slots, table, p0, n, g, head_dim, kv_width, kh, block_tokens);
    __syncthreads();
    tile_softmax(sc, acc, st, n, g, head_dim);
    __syncthreads();
    // PV: a thread per (head, element); consecutive threads read consecutive V elements.
    for (int idx = threadIdx.x; idx < g * head_dim; idx += blockDim.x) {
      const int h = idx / head_dim, i = idx % head_dim;
      float a = 0.f;
      for (int p = 0; p < n; ++p)
        a += sc[h * kVarlenTile + p] *
             to_f(v_cache[slots[p] * kv_width + static_cast<int64_t>(kh) * head_dim + i]);
      acc[idx] += a;
    }
    __syncthreads();
  }
  varlen_finish(acc, st, out, partials, tok, h0, g, q_heads, head_dim, split, splits);
}

}  // namespace

void launch_rope_varlen(const KernelLaunch& k, cudaStream_t s, void* qkv, const int32_t* meta,
                        const VarlenMeta& m, const AttnShape& a, float theta, DType t) {
  if (k.grid.x == 0) return;
  const int64_t row_stride = (a.q_heads + 2 * a.kv_heads) * a.head_dim;
  dispatch_dtype(t, "rope", [&](auto tag) {
    using T = decltype(tag);
    rope_varlen_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
        static_cast<T*>(qkv), meta + m.token_pos, m.tokens, a.q_heads + a.kv_heads, row_stride,
        a.head_dim, theta);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_kv_write_varlen(const KernelLaunch& k, cudaStream_t s, const void* qkv, void* k_cache,
                            void* v_cache, const int32_t* meta, const VarlenMeta& m,
                            const AttnShape& a, DType t) {
  if (k.grid.x == 0) return;
  const VarlenPtrs p = ptrs(meta, m);
  dispatch_dtype(t, "kv_write", [&](auto tag) {
    using T = decltype(tag);
    kv_write_varlen_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
        static_cast<const T*>(qkv), static_cast<T*>(k_cache), static_cast<T*>(v_cache), p.token_seq,
        p.token_pos, p.seq_table0, p.tables, m.tokens, static_cast<int>(m.block_tokens), a.q_heads,
        a.kv_heads, a.head_dim);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_attention_varlen(const VarlenAttnPlan& p, cudaStream_t s, const void* qkv,
                             const void* k_cache, const void* v_cache, void* out, float* partials,
                             const int32_t* meta, const VarlenMeta& m, const AttnShape& a,
                             DType t) {
  const KernelLaunch& k = p.main;
  if (k.grid.x == 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(a.head_dim));
  dispatch_dtype(t, "attention", [&](auto tag) {
    using T = decltype(tag);
    auto* kernel = attention_varlen_kernel<T>;
    TPB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(k.smem_bytes)));
    kernel<<<to_dim3(k.grid), to_dim3(k.block), static_cast<std::size_t>(k.smem_bytes), s>>>(
        static_cast<const T*>(qkv), static_cast<const T*>(k_cache), static_cast<const T*>(v_cache),
        static_cast<T*>(out), partials, ptrs(meta, m), static_cast<int>(m.block_tokens),
        static_cast<int>(a.q_heads), static_cast<int>(a.kv_heads), static_cast<int>(a.head_dim),
        static_cast<int>(p.chunk), static_cast<int>(p.splits), scale);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
  if (p.splits > 1) launch_attention_combine(p.combine, s, partials, out, p.splits, a.head_dim, t);
}

}  // namespace tpb::cuda_kernels
