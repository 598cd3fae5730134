// Rope and KV write in one pass over the qkv rows: q and k rotated in place (as rope.cu), the
// rotated k and the v written into the caches [batch, max_ctx, kv_heads, head_dim] (as
// kv_write.cu), so each k and v element is read from memory once.
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

// One thread per (token, head of the q_heads + 2 kv_heads in a qkv row, 16-byte chunk of the
// head's first half), and the matching chunk of its second half: a q head's pair is rotated;
// a k head's is rotated and cached; a v head's is copied. Heads run q, k, v as the row does,
// so a warp is all one kind except at the two boundaries.
template <class T, bool kAligned>
__global__ void rope_kv_write_kernel(T* qkv, T* k_cache, T* v_cache, int64_t tokens,
                                     int64_t tokens_per_seq, int64_t pos0, int64_t max_ctx,
                                     int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                     float theta) {
  const int64_t half = head_dim / 2, per_head = div_up(half, kVec<T>);
  const int64_t heads = q_heads + 2 * kv_heads;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= tokens * heads * per_head) return;
  const int64_t c = idx % per_head;
  const int64_t h = (idx / per_head) % heads;
  const int64_t tok = idx / (per_head * heads);
  const int64_t pos = pos0 + tok % tokens_per_seq;
  T* head = qkv + (tok * heads + h) * head_dim;
  if (h < q_heads) {
    rope_chunk<kAligned>(head, c, half, static_cast<float>(pos), head_dim, theta);
    return;
  }
  // k head kh = h - q_heads, v head kh = h - q_heads - kv_heads: the same cache offset.
  const bool is_k = h < q_heads + kv_heads;
  const int64_t kh = (h - q_heads) % kv_heads;
  const int64_t seq = tok / tokens_per_seq;
  T* dst = (is_k ? k_cache : v_cache) + ((seq * max_ctx + pos) * kv_heads + kh) * head_dim;
  if (is_k) {
    // The cache gets the rotated values rounded as qkv stores them: what kv_write would copy.
    const ChunkPair<T> r =
        rope_chunk<kAligned>(head, c, half, static_cast<float>(pos), head_dim, theta);
    store_chunk<kAligned>(dst, c, half, r.lo);
    store_chunk<kAligned>(dst + half, c, half, r.hi);
  } else {
    copy_chunk<kAligned>(dst, head, c, half);
    copy_chunk<kAligned>(dst + half, head + half, c, half);
  }
}

}  // namespace

void launch_rope_kv_write(const KernelLaunch& k, cudaStream_t s, void* qkv, void* k_cache,
                          void* v_cache, int64_t tokens_per_seq, int64_t pos0, const AttnShape& a,
                          float theta, DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "rope_kv_write", [&](auto tag) {
    using T = decltype(tag);
    // Whole chunks in each half-head put every chunk of qkv and of the caches on a 16-byte
    // boundary: all row and head offsets are multiples of head_dim = 2 * half.
    const bool aligned = (a.head_dim / 2) % kVec<T> == 0 && aligned16(qkv, k_cache, v_cache);
    dispatch_aligned(aligned, [&](auto al) {
      rope_kv_write_kernel<T, decltype(al)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<T*>(qkv), static_cast<T*>(k_cache), static_cast<T*>(v_cache),
          a.batch * tokens_per_seq, tokens_per_seq, pos0, a.max_ctx, a.q_heads, a.kv_heads,
          a.head_dim, theta);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
