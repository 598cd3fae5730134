// Decode attention (flash-decoding). One block per (split, KV head, sequence) scores every
// query head of its GQA group against its chunk of cached positions, so each K and V element
// is read from memory once; with several splits a combine kernel merges the partial softmax
// states (max m, sum l, unnormalised accumulators) as softmax = sum_s acc_s e^(m_s - M) / L.
#include <cmath>

#include "layers/cuda/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

constexpr int kMaxLaneElems = 8;  // head_dim <= 256: up to 8 elements of a K row per lane

// Softmax over a block's chunk of n positions, a warp per head; probabilities overwrite the
// scores sc[h][p], and stats[h] = {chunk max, sum of exponentials} for the combine step.
__device__ __forceinline__ void chunk_softmax(float* sc, float* stats, int g, int n, int64_t chunk,
                                              int warp, int lane, int nwarps) {
  for (int h = warp; h < g; h += nwarps) {
    float m = -INFINITY;
    for (int p = lane; p < n; p += 32) m = fmaxf(m, sc[h * chunk + p]);
    m = warp_max(m);
    float l = 0.f;
    for (int p = lane; p < n; p += 32) {
      const float e = expf(sc[h * chunk + p] - m);
      sc[h * chunk + p] = e;
      l += e;
    }
    l = warp_sum(l);
    if (lane == 0) {
      stats[2 * h] = m;
      stats[2 * h + 1] = l;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kDecodeThreads)
    attention_decode_kernel(const T* qkv, const T* k_cache, const T* v_cache, T* out,
                            float* partials, int64_t ctx_len, int64_t chunk, int64_t splits,
                            int q_heads, int kv_heads, int head_dim, int64_t max_ctx, float scale) {
  extern __shared__ float smem[];
  const int g = q_heads / kv_heads;
  const int64_t split = blockIdx.x;
  const int kh = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int h0 = kh * g;  // first query head of this KV head's group
  const int64_t p0 = split * chunk;
  const int n = static_cast<int>(min(chunk, ctx_len - p0));
  float* qs = smem;               // [g][head_dim], pre-scaled by 1/sqrt(head_dim)
  float* sc = qs + g * head_dim;  // [g][chunk]: scores, then probabilities
  float* stats = sc + g * chunk;  // [g][2]: chunk max and sum of exponentials

  const int64_t row_stride = static_cast<int64_t>(q_heads + 2 * kv_heads) * head_dim;
  const T* q = qkv + b * row_stride + static_cast<int64_t>(h0) * head_dim;  // g heads, contiguous
  for (int i = threadIdx.x; i < g * head_dim; i += blockDim.x) qs[i] = to_f(q[i]) * scale;
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nwarps = blockDim.x / 32;
  const int epl = head_dim / 32;
  const int64_t pos_stride = static_cast<int64_t>(kv_heads) * head_dim;
  const T* kbase = k_cache + (b * max_ctx + p0) * pos_stride + static_cast<int64_t>(kh) * head_dim;
  const T* vbase = v_cache + (b * max_ctx + p0) * pos_stride + static_cast<int64_t>(kh) * head_dim;

  // Scores: a warp per position holds the K row in registers and dots it with all g queries.
  for (int p = warp; p < n; p += nwarps) {
    float kr[kMaxLaneElems];
#pragma unroll
    for (int i = 0; i < kMaxLaneElems; ++i)
      kr[i] = i < epl ? to_f(kbase[p * pos_stride + lane + 32 * i]) : 0.f;
    for (int h = 0; h < g; ++h) {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < kMaxLaneElems; ++i)
        if (i < epl) s += qs[h * head_dim + lane + 32 * i] * kr[i];
      s = warp_sum(s);
      if (lane == 0) sc[h * chunk + p] = s;
    }
  }
  __syncthreads();

  chunk_softmax(sc, stats, g, n, chunk, warp, lane, nwarps);
  __syncthreads();

  // P V: a thread per output dimension keeps all g accumulators, so V is read once.
  for (int e = threadIdx.x; e < head_dim; e += blockDim.x) {
    float acc[kDecodeMaxGroup];
#pragma unroll
    for (int h = 0; h < kDecodeMaxGroup; ++h) acc[h] = 0.f;
#pragma unroll 4
    for (int p = 0; p < n; ++p) {
      const float v = to_f(vbase[p * pos_stride + e]);
#pragma unroll
      for (int h = 0; h < kDecodeMaxGroup; ++h)
        if (h < g) acc[h] += sc[h * chunk + p] * v;
    }
#pragma unroll
    for (int h = 0; h < kDecodeMaxGroup; ++h) {
      if (h >= g) break;
      const int64_t bh = b * q_heads + h0 + h;
      if (splits == 1) {
        out[bh * head_dim + e] = from_f<T>(acc[h] / stats[2 * h + 1]);
      } else {
        float* part = partials + (bh * splits + split) * (head_dim + 2);
        part[e] = acc[h];
        if (e == 0) {
          part[head_dim] = stats[2 * h];
          part[head_dim + 1] = stats[2 * h + 1];
        }
      }
    }
  }
}

// One block per (sequence, query head); partial record s is [acc(head_dim), m, l].
template <class T>
__global__ void attention_decode_combine_kernel(const float* partials, T* out, int64_t splits,
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

}  // namespace

void launch_attention_decode(const DecodePlan& p, cudaStream_t s, const void* qkv,
                             const void* k_cache, const void* v_cache, void* out, float* partials,
                             int64_t ctx_len, const AttnShape& a, DType t) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  dispatch_dtype(t, "attention_decode", [&](auto tag) {
    using T = decltype(tag);
    if (p.main.smem_bytes > 48 * 1024)  // opt in beyond the default 48 KiB (sm_80+)
      TPB_CUDA_CHECK(cudaFuncSetAttribute(attention_decode_kernel<T>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(p.main.smem_bytes)));
    attention_decode_kernel<T><<<to_dim3(p.main.grid), to_dim3(p.main.block),
                                 static_cast<size_t>(p.main.smem_bytes), s>>>(
        static_cast<const T*>(qkv), static_cast<const T*>(k_cache), static_cast<const T*>(v_cache),
        static_cast<T*>(out), partials, ctx_len, p.chunk, p.splits, static_cast<int>(a.q_heads),
        static_cast<int>(a.kv_heads), static_cast<int>(a.head_dim), a.max_ctx, scale);
    TPB_CUDA_CHECK(cudaGetLastError());
    if (p.splits > 1) {
      attention_decode_combine_kernel<T>
          <<<to_dim3(p.combine.grid), to_dim3(p.combine.block), 0, s>>>(
              partials, static_cast<T*>(out), p.splits, static_cast<int>(a.head_dim));
      TPB_CUDA_CHECK(cudaGetLastError());
    }
  });
}

}  // namespace tpb::cuda_kernels
