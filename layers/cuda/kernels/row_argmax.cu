// Greedy sampling's local half: per row of logits, the largest value and its column. Ties keep
// the lowest column, as the CPU backend's scan does, so every rank and backend picks alike.
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

// (v, c) beats (bv, bc): larger, or as large at a lower column. A NaN never beats anything.
__device__ __forceinline__ bool beats(float v, int c, float bv, int c_best) {
  return v > bv || (v == bv && c < c_best);
}

__device__ __forceinline__ void warp_best(float& v, int& c) {
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oc = __shfl_xor_sync(0xffffffffu, c, o);
    if (beats(ov, oc, v, c)) {
      v = ov;
      c = oc;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kArgmaxThreads)
    row_argmax_kernel(const T* logits, int64_t cols, float* max_out, int32_t* col_out) {
  __shared__ float wv[kArgmaxThreads / 32];
  __shared__ int wc[kArgmaxThreads / 32];
  const T* row = logits + static_cast<int64_t>(blockIdx.x) * cols;
  float v = -INFINITY;
  int c = 0x7fffffff;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float x = to_f(row[j]);
    if (beats(x, static_cast<int>(j), v, c)) {
      v = x;
      c = static_cast<int>(j);
    }
  }
  warp_best(v, c);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    wv[warp] = v;
    wc[warp] = c;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? wv[lane] : -INFINITY;
    c = lane < static_cast<int>(blockDim.x / 32) ? wc[lane] : 0x7fffffff;
    warp_best(v, c);
    if (lane == 0) {
      // A row of NaNs (or -inf) kept no candidate: column 0, as the CPU scan leaves it.
      if (c == 0x7fffffff) {
        c = 0;
        v = to_f(row[0]);
      }
      max_out[blockIdx.x] = v;
      col_out[blockIdx.x] = c;
    }
  }
}

}  // namespace

void launch_row_argmax(const KernelLaunch& k, cudaStream_t s, const void* logits, int64_t cols,
                       float* max_out, int32_t* col_out, DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "row_argmax", [&](auto tag) {
    using T = decltype(tag);
    row_argmax_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(static_cast<const T*>(logits),
                                                                      cols, max_out, col_out);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
