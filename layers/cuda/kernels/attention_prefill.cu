// Causal prefill attention, a simple tiled flash-attention on CUDA cores (fp32 math, no tensor
// cores: correct and reasonably fast, but at long prompts it, not the GEMMs, bounds prefill
// MFU; the per-op times in results show it). A block holds 32 queries of one head; each query
// row is split over head_dim/32 threads that own dimensions part, part + TPR, ... (interleaved
// so the threads of a row hit different shared-memory banks). K/V tiles of 32 positions are
// staged in shared memory; the online softmax rescales once per tile.
#include <cmath>

#include "layers/cuda/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

template <class T, int D>
__global__ void __launch_bounds__(D)
    attention_prefill_kernel(const T* qkv, const T* k_cache, const T* v_cache, T* out, int64_t seq,
                             int q_heads, int kv_heads, int64_t max_ctx, float scale) {
  constexpr int kTpr = D / 32;  // threads per query row
  constexpr int kEpt = 32;      // dimensions per thread
  extern __shared__ float smem[];
  float* ks = smem;                                 // [kPrefillKeys][D]
  float* vs = smem + kPrefillKeys * D;              // [kPrefillKeys][D]
  const int64_t tile = gridDim.x - 1 - blockIdx.x;  // the longest (last) tiles start first
  const int h = blockIdx.y;
  const int64_t b = blockIdx.z;
  const int kh = h / (q_heads / kv_heads);
  const int r = threadIdx.x / kTpr, part = threadIdx.x % kTpr;
  const int64_t qi = tile * kPrefillQueries + r;
  const bool valid = qi < seq;
  const int lane = threadIdx.x % 32;
  // The kTpr lanes of one row; rows of a warp may take different loop counts on the diagonal.
  const unsigned row_mask = ((1u << kTpr) - 1u) << (lane & ~(kTpr - 1));

  const int64_t row_stride = static_cast<int64_t>(q_heads + 2 * kv_heads) * D;
  float q[kEpt], acc[kEpt];
  const T* qrow = qkv + (b * seq + (valid ? qi : 0)) * row_stride + static_cast<int64_t>(h) * D;
#pragma unroll
  for (int i = 0; i < kEpt; ++i) {
    q[i] = valid ? to_f(qrow[part + kTpr * i]) * scale : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;

  const int64_t pos_stride = static_cast<int64_t>(kv_heads) * D;
  const T* kbase = k_cache + b * max_ctx * pos_stride + static_cast<int64_t>(kh) * D;
  const T* vbase = v_cache + b * max_ctx * pos_stride + static_cast<int64_t>(kh) * D;
  const int64_t kv_end = min(seq, (tile + 1) * kPrefillQueries);  // the tile's last query + 1
  for (int64_t k0 = 0; k0 < kv_end; k0 += kPrefillKeys) {
    const int tile_keys = static_cast<int>(min(static_cast<int64_t>(kPrefillKeys), kv_end - k0));
    __syncthreads();  // the previous tile is no longer read
    for (int idx = threadIdx.x; idx < tile_keys * D; idx += blockDim.x) {
      const int j = idx / D, e = idx % D;
      ks[idx] = to_f(kbase[(k0 + j) * pos_stride + e]);
      vs[idx] = to_f(vbase[(k0 + j) * pos_stride + e]);
    }
    __syncthreads();
    // Causal bound: query qi sees keys k0 .. qi.
    const int nk = valid ? static_cast<int>(min(static_cast<int64_t>(tile_keys), qi - k0 + 1)) : 0;
    if (nk <= 0) continue;
    float s[kPrefillKeys];
    float mt = m;
#pragma unroll
    for (int j = 0; j < kPrefillKeys; ++j) {
      if (j < nk) {
        float d = 0.f;
#pragma unroll
        for (int i = 0; i < kEpt; ++i) d += q[i] * ks[j * D + part + kTpr * i];
#pragma unroll
        for (int o = kTpr / 2; o > 0; o >>= 1) d += __shfl_xor_sync(row_mask, d, o);
        s[j] = d;
        mt = fmaxf(mt, d);
      }
    }
    const float corr = expf(m - mt);  // 0 on the first tile (m = -inf, mt finite)
    l *= corr;
#pragma unroll
    for (int i = 0; i < kEpt; ++i) acc[i] *= corr;
#pragma unroll
    for (int j = 0; j < kPrefillKeys; ++j) {
      if (j < nk) {
        const float p = expf(s[j] - mt);
        l += p;
#pragma unroll
        for (int i = 0; i < kEpt; ++i) acc[i] += p * vs[j * D + part + kTpr * i];
      }
    }
    m = mt;
  }
  if (!valid) return;
  T* orow = out + (b * seq + qi) * static_cast<int64_t>(q_heads) * D + static_cast<int64_t>(h) * D;
  const float inv_l = 1.0f / l;
#pragma unroll
  for (int i = 0; i < kEpt; ++i) orow[part + kTpr * i] = from_f<T>(acc[i] * inv_l);
}

template <class T, int D>
void launch_d(const KernelLaunch& k, cudaStream_t s, const void* qkv, const void* k_cache,
              const void* v_cache, void* out, int64_t seq, const AttnShape& a) {
  if (k.smem_bytes > 48 * 1024)  // opt in beyond the default 48 KiB (sm_80+)
    TPB_CUDA_CHECK(cudaFuncSetAttribute(attention_prefill_kernel<T, D>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(k.smem_bytes)));
  attention_prefill_kernel<T, D>
      <<<to_dim3(k.grid), to_dim3(k.block), static_cast<size_t>(k.smem_bytes), s>>>(
          static_cast<const T*>(qkv), static_cast<const T*>(k_cache),
          static_cast<const T*>(v_cache), static_cast<T*>(out), seq, static_cast<int>(a.q_heads),
          static_cast<int>(a.kv_heads), a.max_ctx, 1.0f / std::sqrt(static_cast<float>(D)));
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_attention_prefill(const KernelLaunch& k, cudaStream_t s, const void* qkv,
                              const void* k_cache, const void* v_cache, void* out, int64_t seq,
                              const AttnShape& a, DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "attention_prefill", [&](auto tag) {
    using T = decltype(tag);
    switch (a.head_dim) {
      case 32:
        return launch_d<T, 32>(k, s, qkv, k_cache, v_cache, out, seq, a);
      case 64:
        return launch_d<T, 64>(k, s, qkv, k_cache, v_cache, out, seq, a);
      case 128:
        return launch_d<T, 128>(k, s, qkv, k_cache, v_cache, out, seq, a);
      case 256:
        return launch_d<T, 256>(k, s, qkv, k_cache, v_cache, out, seq, a);
      default:
        throw BadInput("attention: unsupported head_dim " + std::to_string(a.head_dim));
    }
  });
}

}  // namespace tpb::cuda_kernels
