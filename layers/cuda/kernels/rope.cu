// Rotary embedding (Llama rotate-half) in place on the q and k parts of qkv rows. Pair
// (i, i + d/2) of a head at position p rotates by p * theta^(-2i/d).
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

// One thread per (token, q or k head, 16-byte chunk of the head's first half): it rotates
// those pairs (i, i + d/2).
template <class T, bool kAligned>
__global__ void rope_kernel(T* qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
                            int64_t rot_heads, int64_t row_stride, int64_t head_dim, float theta) {
  const int64_t half = head_dim / 2, per_head = div_up(half, kVec<T>);
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * rot_heads * per_head) return;
  const int64_t c = idx % per_head;
  const int64_t head = (idx / per_head) % rot_heads;  // q heads first, then k heads: contiguous
  const int64_t tok = idx / (per_head * rot_heads);
  const float pos = static_cast<float>(pos0 + tok % tokens_per_seq);
  rope_chunk<kAligned>(qkv + tok * row_stride + head * head_dim, c, half, pos, head_dim, theta);
}

}  // namespace

void launch_rope(const KernelLaunch& k, cudaStream_t s, void* qkv, int64_t tokens,
                 int64_t tokens_per_seq, int64_t pos0, const AttnShape& a, float theta, DType t) {
  if (k.grid.x == 0) return;
  const int64_t row_stride = (a.q_heads + 2 * a.kv_heads) * a.head_dim;
  dispatch_dtype(t, "rope", [&](auto tag) {
    using T = decltype(tag);
    // Whole chunks in each half-head make every chunk start 16-byte aligned: row_stride and
    // head offsets are multiples of head_dim = 2 * half.
    dispatch_aligned((a.head_dim / 2) % kVec<T> == 0 && aligned16(qkv), [&](auto aligned) {
      rope_kernel<T, decltype(aligned)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<T*>(qkv), tokens, tokens_per_seq, pos0, a.q_heads + a.kv_heads, row_stride,
          a.head_dim, theta);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
