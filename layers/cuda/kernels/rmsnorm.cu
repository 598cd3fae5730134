// RMSNorm, y = x / sqrt(mean(x^2) + eps) * gamma per row with fp32 sums, and the fused
// residual add + RMSNorm (x += y, then xn = rmsnorm(x)). A warp or a block per row, as
// plan_rmsnorm picks; 16-byte chunks, the first kRmsnormChunks of each thread kept in registers
// so a row is read from memory once.
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

// Sum over the threads of one row: a warp (blockDim.x == 32, a row per threadIdx.y) or the
// whole block (blockDim.y == 1). Every thread adds the warp sums in the same order, so all
// of them get the same value without a second barrier.
__device__ __forceinline__ float row_sum(float v, float* warp_sums) {
  v = warp_sum(v);
  if (blockDim.x == 32) return v;
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.f;
  for (unsigned w = 0; w < blockDim.x / 32; ++w) s += warp_sums[w];
  return s;
}

template <class T>
__device__ __forceinline__ float sum_sq(const Chunk<T>& c) {
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kVec<T>; ++j) s += c.v[j] * c.v[j];
  return s;
}

// Chunk c of the norm's input: x, or with kAdd x + y rounded to T and stored back to x (the
// norm then sees exactly the x that add would have left, as the unfused ops do).
template <bool kAligned, bool kAdd, class T>
__device__ __forceinline__ Chunk<T> input_chunk(const T* x, const T* y, T* x_out, int64_t c,
                                                int64_t dim) {
  Chunk<T> v = load_chunk<kAligned>(x, c, dim);
  if constexpr (kAdd) {
    const Chunk<T> w = load_chunk<kAligned>(y, c, dim);
#pragma unroll
    for (int j = 0; j < kVec<T>; ++j) v.v[j] = to_f(from_f<T>(v.v[j] + w.v[j]));
    store_chunk<kAligned>(x_out, c, dim, v);
  }
  return v;
}

template <bool kAligned, class T>
__device__ __forceinline__ void store_scaled(T* out, int64_t c, int64_t dim, Chunk<T> v,
                                             const Chunk<T>& g, float inv_rms) {
#pragma unroll
  for (int j = 0; j < kVec<T>; ++j) v.v[j] = v.v[j] * inv_rms * g.v[j];
  store_chunk<kAligned>(out, c, dim, v);
}

// One row by the blockDim.x threads of threadIdx.y. Thread t owns chunks t, t + blockDim.x, ...;
// its first kRmsnormChunks (x and gamma) stay in registers between the two passes, and gamma
// is loaded before the reduction so its latency hides behind it. Chunks past those (rows
// longer than kRmsnormChunks * kRmsnormMaxThreads chunks) are read again in the second pass,
// from L2: this block has just touched them.
template <bool kAligned, bool kAdd, class T>
__device__ void norm_row(const T* x, const T* y, T* x_out, const T* gamma, T* out, int64_t dim,
                         float eps, float* warp_sums) {
  constexpr int R = kRmsnormChunks;
  const int64_t n = div_up(dim, kVec<T>), t = threadIdx.x, step = blockDim.x;
  Chunk<T> keep[R], g[R];
  float ss = 0.f;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t c = t + r * step;
    if (c < n) {
      keep[r] = input_chunk<kAligned, kAdd>(x, y, x_out, c, dim);
      g[r] = load_chunk<kAligned>(gamma, c, dim);
      ss += sum_sq(keep[r]);
    }
  }
  for (int64_t c = t + R * step; c < n; c += step)
    ss += sum_sq(input_chunk<kAligned, kAdd>(x, y, x_out, c, dim));
  const float inv_rms = rsqrtf(row_sum(ss, warp_sums) / static_cast<float>(dim) + eps);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int64_t c = t + r * step;
    if (c < n) store_scaled<kAligned>(out, c, dim, keep[r], g[r], inv_rms);
  }
  const T* src = kAdd ? x_out : x;  // this thread wrote those chunks of x_out in pass one
  for (int64_t c = t + R * step; c < n; c += step)
    store_scaled<kAligned>(out, c, dim, load_chunk<kAligned>(src, c, dim),
                           load_chunk<kAligned>(gamma, c, dim), inv_rms);
}

// The row of this thread; a row's threads share threadIdx.y, so a row past the end drops whole
// warps (and a block per row, blockDim.y == 1, never has one).
__device__ __forceinline__ int64_t norm_row_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
}

template <class T, bool kAligned>
__global__ void __launch_bounds__(kRmsnormMaxThreads)
    rmsnorm_kernel(const T* x, const T* gamma, T* y, int64_t rows, int64_t dim, float eps) {
  __shared__ float warp_sums[kRmsnormMaxThreads / 32];
  const int64_t r = norm_row_index();
  if (r >= rows) return;
  norm_row<kAligned, false>(x + r * dim, static_cast<const T*>(nullptr), static_cast<T*>(nullptr),
                            gamma, y + r * dim, dim, eps, warp_sums);
}

template <class T, bool kAligned>
__global__ void __launch_bounds__(kRmsnormMaxThreads)
    add_rmsnorm_kernel(T* x, const T* y, const T* gamma, T* xn, int64_t rows, int64_t dim,
                       float eps) {
  __shared__ float warp_sums[kRmsnormMaxThreads / 32];
  const int64_t r = norm_row_index();
  if (r >= rows) return;
  norm_row<kAligned, true>(x + r * dim, y + r * dim, x + r * dim, gamma, xn + r * dim, dim, eps,
                           warp_sums);
}

}  // namespace

void launch_rmsnorm(const KernelLaunch& k, cudaStream_t s, const void* x, const void* gamma,
                    void* y, int64_t rows, int64_t dim, float eps, DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "rmsnorm", [&](auto tag) {
    using T = decltype(tag);
    dispatch_aligned(dim % kVec<T> == 0 && aligned16(x, gamma, y), [&](auto aligned) {
      rmsnorm_kernel<T, decltype(aligned)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<T*>(y), rows, dim,
          eps);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_add_rmsnorm(const KernelLaunch& k, cudaStream_t s, void* x, const void* y,
                        const void* gamma, void* xn, int64_t rows, int64_t dim, float eps,
                        DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "add_rmsnorm", [&](auto tag) {
    using T = decltype(tag);
    dispatch_aligned(dim % kVec<T> == 0 && aligned16(x, y, gamma, xn), [&](auto aligned) {
      add_rmsnorm_kernel<T, decltype(aligned)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<T*>(x), static_cast<const T*>(y), static_cast<const T*>(gamma),
          static_cast<T*>(xn), rows, dim, eps);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
