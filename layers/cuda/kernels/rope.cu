// Rotary embedding (Llama rotate-half) in place on the q and k parts of qkv rows. Pair
// (i, i + d/2) of a head at position p rotates by p * theta^(-2i/d).
#include "layers/cuda/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

template <class T>
__global__ void rope_kernel(T* qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
                            int64_t rot_heads, int64_t row_stride, int64_t head_dim, float theta) {
  const int64_t half = head_dim / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * rot_heads * half) return;
  const int64_t i = idx % half;
  const int64_t head = (idx / half) % rot_heads;  // q heads first, then k heads: contiguous
  const int64_t tok = idx / (half * rot_heads);
  const float pos = static_cast<float>(pos0 + tok % tokens_per_seq);
  rope_pair(qkv + tok * row_stride + head * head_dim, i, half, pos, head_dim, theta);
}

}  // namespace

void launch_rope(const KernelLaunch& k, cudaStream_t s, void* qkv, int64_t tokens,
                 int64_t tokens_per_seq, int64_t pos0, const AttnShape& a, float theta, DType t) {
  if (k.grid.x == 0) return;
  const int64_t row_stride = (a.q_heads + 2 * a.kv_heads) * a.head_dim;
  dispatch_dtype(t, "rope", [&](auto tag) {
    using T = decltype(tag);
    rope_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
        static_cast<T*>(qkv), tokens, tokens_per_seq, pos0, a.q_heads + a.kv_heads, row_stride,
        a.head_dim, theta);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
