// Copies the k and v parts of qkv rows into the KV caches [batch, max_ctx, kv_heads, head_dim].
// Token t belongs to sequence t / tokens_per_seq at position pos0 + t % tokens_per_seq.
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

// One thread per (token, 16-byte chunk of its kv_heads * head_dim): that chunk of k and of v.
template <class T, bool kAligned>
__global__ void kv_write_kernel(const T* qkv, T* k_cache, T* v_cache, int64_t tokens,
                                int64_t tokens_per_seq, int64_t pos0, int64_t max_ctx,
                                int64_t q_heads, int64_t kv_heads, int64_t head_dim) {
  const int64_t width = kv_heads * head_dim;  // one token's k (or v)
  const int64_t per_token = div_up(width, kVec<T>);
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * per_token) return;
  const int64_t tok = idx / per_token, c = idx % per_token;
  const int64_t seq = tok / tokens_per_seq;
  const int64_t pos = pos0 + tok % tokens_per_seq;
  const T* row = qkv + tok * (q_heads + 2 * kv_heads) * head_dim;
  const int64_t dst = (seq * max_ctx + pos) * width;
  copy_chunk<kAligned>(k_cache + dst, row + q_heads * head_dim, c, width);
  copy_chunk<kAligned>(v_cache + dst, row + (q_heads + kv_heads) * head_dim, c, width);
}

}  // namespace

void launch_kv_write(const KernelLaunch& k, cudaStream_t s, const void* qkv, void* k_cache,
                     void* v_cache, int64_t tokens_per_seq, int64_t pos0, const AttnShape& a,
                     DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "kv_write", [&](auto tag) {
    using T = decltype(tag);
    // head_dim in whole chunks puts every k, v and cache row start on a chunk boundary.
    const bool aligned = a.head_dim % kVec<T> == 0 && aligned16(qkv, k_cache, v_cache);
    dispatch_aligned(aligned, [&](auto al) {
      kv_write_kernel<T, decltype(al)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<const T*>(qkv), static_cast<T*>(k_cache), static_cast<T*>(v_cache),
          a.batch * tokens_per_seq, tokens_per_seq, pos0, a.max_ctx, a.q_heads, a.kv_heads,
          a.head_dim);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
