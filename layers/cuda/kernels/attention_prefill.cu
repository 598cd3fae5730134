// Causal prefill attention on tensor cores: cuBLAS strided-batched GEMMs do the matmuls, one
// kernel here does the softmax. Per sequence and query tile [q0, q1) (plan_attention_prefill):
// S = Q K^T / sqrt(d) over keys [0, q1) into an fp32 workspace, the causal softmax overwrites S
// with P in the storage dtype (masked keys 0), then O = P V lands in the output rows.
//
// cuBLAS is column-major: a row-major [r x c] matrix with row stride ld is, to cuBLAS, a
// column-major [c x r] matrix with leading dimension ld. So
//   S (row-major [rows x q1], ld) = Q K^T   is   S^T (q1 x rows) = op_T(K^T) * Q^T
//     A = K stored as col-major d x q1 (ld = kv_heads*d), transposed; B = Q^T (d x rows, ld =
//     the qkv row width); C = S^T (q1 x rows, ld).
//   O (row-major [rows x d], ld = q_heads*d) = P V   is   O^T (d x rows) = V^T * P^T
//     A = V^T (d x q1, ld = kv_heads*d), B = P^T (q1 x rows, ld = P's row stride), C = O^T.
// A batch covers the heads of one GEMM: a GQA group (K/V batch stride 0, so the group's K and
// V tile is fetched once and shared through L2) or one head of every group (K/V stride d).
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

constexpr int kSoftmaxWarps = kPrefillSoftmaxThreads / 32;

// Block-wide max or sum of v (every thread gets it); `red` holds one value per warp. The first
// barrier keeps a fast warp from overwriting `red` while another still reads the last result.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* red) {
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  v = red[0];
  for (int w = 1; w < kSoftmaxWarps; ++w) v = kMax ? fmaxf(v, red[w]) : v + red[w];
  return v;
}

// One block per (query row r of the tile, head slot). Row r is query q0 + r and sees keys
// 0 .. q0 + r; keys beyond, up to q1, get probability 0. P overwrites S in place: P[j] takes
// the bytes of S from j * sizeof(T) on, which belong to S entries <= j, so each chunk of the
// row is read completely (a barrier) before it is written, and later chunks are untouched.
template <class T>
__global__ void __launch_bounds__(kPrefillSoftmaxThreads)
    prefill_softmax_kernel(float* ws, int64_t rows, int64_t ld, int64_t keys, int64_t q0) {
  __shared__ float red[kSoftmaxWarps];
  const int64_t r = blockIdx.x;
  float* srow = ws + (static_cast<int64_t>(blockIdx.y) * rows + r) * ld;
  T* prow = reinterpret_cast<T*>(srow);
  const int64_t valid = q0 + r + 1;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) m = fmaxf(m, srow[j]);
  m = block_reduce<true>(m, red);
  float l = 0.f;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) l += expf(srow[j] - m);
  l = block_reduce<false>(l, red);
  const float inv_l = 1.0f / l;  // l >= 1: the row's maximum contributes exp(0)
  for (int64_t base = 0; base < keys; base += blockDim.x) {
    const int64_t j = base + threadIdx.x;
    const float p = j < valid ? expf(srow[j] - m) * inv_l : 0.f;
    __syncthreads();  // the chunk is read by every thread before any of it is overwritten
    if (j < keys) prow[j] = from_f<T>(p);
  }
}

template <class T>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return CUDA_R_16BF;
  return CUDA_R_16F;
}

// The operands of one tile of one sequence; `u` below picks a GEMM batch of heads.
template <class T>
struct TileArgs {
  const T *q, *k, *v;  // the tile's first query row, the sequence's K and V at position 0
  T* out;              // the tile's first output row
  float* ws;
  int64_t rows, keys, ld, q0;
};

// The heads of GEMM batch u, for both GEMMs: the first query and KV head and the step from one
// GEMM in the batch to the next, in heads. A batch over a group takes its g query heads, a head
// apart, on one KV head; otherwise one query head of each group, g apart, each on its KV head.
struct HeadBatch {
  int64_t d, head0, kv0, head_step, kv_step, kv_ld;
};
HeadBatch head_batch(const PrefillPlan& p, const AttnShape& a, int64_t u) {
  const int64_t d = a.head_dim, g = a.q_heads / a.kv_heads;
  const int64_t head0 = p.batch_over_group ? u * g : u, kv0 = p.batch_over_group ? u : 0;
  const int64_t head_step = p.batch_over_group ? 1 : g, kv_step = p.batch_over_group ? 0 : 1;
  return {d, head0, kv0, head_step, kv_step, a.kv_heads * d};
}

// Strided-batched S^T = op_T(K^T) Q^T for GEMM batch u, writing head slots from `slot0`.
template <class T>
void scores_gemm(cublasHandle_t h, const PrefillPlan& p, const TileArgs<T>& x, const AttnShape& a,
                 int64_t u, int64_t slot0) {
  const auto [d, head0, kv0, head_step, kv_step, kv_ld] = head_batch(p, a, u);
  const int64_t row_stride = (a.q_heads + 2 * a.kv_heads) * d;
  const float alpha = 1.0f / std::sqrt(static_cast<float>(d)), beta = 0.f;
  TPB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(x.keys), static_cast<int>(x.rows),
      static_cast<int>(d), &alpha, x.k + kv0 * d, cuda_type<T>(), static_cast<int>(kv_ld),
      kv_step * d, x.q + head0 * d, cuda_type<T>(), static_cast<int>(row_stride), head_step * d,
      &beta, x.ws + slot0 * x.rows * x.ld, CUDA_R_32F, static_cast<int>(x.ld), x.rows * x.ld,
      static_cast<int>(p.gemm_batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Strided-batched O^T = V^T P^T for GEMM batch u, reading the probabilities of its slots.
template <class T>
void values_gemm(cublasHandle_t h, const PrefillPlan& p, const TileArgs<T>& x, const AttnShape& a,
                 int64_t u, int64_t slot0) {
  const auto [d, head0, kv0, head_step, kv_step, kv_ld] = head_batch(p, a, u);
  const int64_t out_ld = a.q_heads * d;
  const int64_t p_ld = x.ld * static_cast<int64_t>(sizeof(float) / sizeof(T));  // P over S
  const T* probs = reinterpret_cast<const T*>(x.ws + slot0 * x.rows * x.ld);
  const float alpha = 1.f, beta = 0.f;
  TPB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(d), static_cast<int>(x.rows),
      static_cast<int>(x.keys), &alpha, x.v + kv0 * d, cuda_type<T>(), static_cast<int>(kv_ld),
      kv_step * d, probs, cuda_type<T>(), static_cast<int>(p_ld), x.rows * p_ld, &beta,
      x.out + head0 * d, cuda_type<T>(), static_cast<int>(out_ld), head_step * d,
      static_cast<int>(p.gemm_batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// One tile: per pass, the scores of heads_per_pass heads, their softmax, their outputs.
template <class T>
void run_tile(cublasHandle_t h, cudaStream_t s, const PrefillPlan& p, const TileArgs<T>& x,
              const AttnShape& a) {
  const int64_t batches_per_pass = p.heads_per_pass / p.gemm_batch;
  const int64_t batches = a.q_heads / p.gemm_batch;
  for (int64_t u0 = 0; u0 < batches; u0 += batches_per_pass) {
    for (int64_t u = u0; u < u0 + batches_per_pass; ++u)
      scores_gemm(h, p, x, a, u, (u - u0) * p.gemm_batch);
    const dim3 grid(static_cast<unsigned>(x.rows), static_cast<unsigned>(p.heads_per_pass));
    prefill_softmax_kernel<T>
        <<<grid, kPrefillSoftmaxThreads, 0, s>>>(x.ws, x.rows, x.ld, x.keys, x.q0);
    TPB_CUDA_CHECK(cudaGetLastError());
    for (int64_t u = u0; u < u0 + batches_per_pass; ++u)
      values_gemm(h, p, x, a, u, (u - u0) * p.gemm_batch);
  }
}

}  // namespace

void launch_attention_prefill(const PrefillPlan& p, cudaStream_t s, cublasHandle_t blas,
                              const void* qkv, const void* k_cache, const void* v_cache, void* out,
                              float* ws, int64_t seq, const AttnShape& a, DType t) {
  dispatch_dtype(t, "attention_prefill", [&](auto tag) {
    using T = decltype(tag);
    const int64_t d = a.head_dim;
    const int64_t row_stride = (a.q_heads + 2 * a.kv_heads) * d;
    for (int64_t b = 0; b < a.batch; ++b) {
      for (int64_t q0 = 0; q0 < seq; q0 += p.query_tile) {
        TileArgs<T> x;
        x.q0 = q0;
        x.keys = std::min(seq, q0 + p.query_tile);
        x.rows = x.keys - q0;
        x.ld = prefill_score_ld(x.keys);
        x.q = static_cast<const T*>(qkv) + (b * seq + q0) * row_stride;
        x.k = static_cast<const T*>(k_cache) + b * a.max_ctx * a.kv_heads * d;
        x.v = static_cast<const T*>(v_cache) + b * a.max_ctx * a.kv_heads * d;
        x.out = static_cast<T*>(out) + (b * seq + q0) * a.q_heads * d;
        x.ws = ws;
        run_tile(blas, s, p, x, a);
      }
    }
  });
}

}  // namespace tpb::cuda_kernels
