// The MLP's elementwise kernels: SwiGLU (out = silu(gate) * up) and the residual add.
#include "layers/cuda/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

template <class T>
__global__ void swiglu_kernel(const T* gate_up, T* out, int64_t rows, int64_t inter) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * inter) return;
  const int64_t r = idx / inter;
  const int64_t i = idx % inter;
  const float g = to_f(gate_up[r * 2 * inter + i]);
  const float u = to_f(gate_up[r * 2 * inter + inter + i]);
  out[idx] = from_f<T>(g / (1.0f + expf(-g)) * u);  // silu(g) * u
}

template <class T>
__global__ void add_kernel(T* x, const T* y, int64_t count) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < count) x[idx] = from_f<T>(to_f(x[idx]) + to_f(y[idx]));
}

}  // namespace

void launch_swiglu(const KernelLaunch& k, cudaStream_t s, const void* gate_up, void* out,
                   int64_t rows, int64_t inter, DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "swiglu", [&](auto tag) {
    using T = decltype(tag);
    swiglu_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
        static_cast<const T*>(gate_up), static_cast<T*>(out), rows, inter);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_add(const KernelLaunch& k, cudaStream_t s, void* x, const void* y, int64_t count,
                DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "add", [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(static_cast<T*>(x),
                                                               static_cast<const T*>(y), count);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
