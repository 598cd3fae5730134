// Deterministic fill: the same counter-based values as the CPU backend (fill_value() in
// layers/fill_hash.h is computed in fp32 on both sides), rounded once to the storage dtype.
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

template <class T>
__global__ void fill_kernel(T* dst, FillSpec f) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= f.rows * f.cols) return;
  const int64_t i = idx / f.cols;
  const int64_t j = idx % f.cols;
  dst[f.dst_offset + i * f.dst_ld + j] = from_f<T>(fill_value(f, i, j));
}

}  // namespace

void launch_fill(const KernelLaunch& k, cudaStream_t s, void* dst, DType t, const FillSpec& f) {
  if (k.grid.x == 0) return;
  if (t == DType::fp8) return launch_fill_fp8(k, s, dst, f);
  dispatch_dtype(t, "fill", [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(static_cast<T*>(dst), f);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
