// The MLP's elementwise kernels: SwiGLU (out = silu(gate) * up) and the residual add, in
// 16-byte chunks (kernel_common.cuh).
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

// One thread per (row, 16-byte chunk of inter): the same chunk of gate and of up.
template <class T, bool kAligned>
__global__ void swiglu_kernel(const T* gate_up, T* out, int64_t rows, int64_t inter) {
  const int64_t per_row = div_up(inter, kVec<T>);
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * per_row) return;
  const int64_t r = idx / per_row, c = idx % per_row;
  const T* gate = gate_up + r * 2 * inter;
  Chunk<T> g = load_chunk<kAligned>(gate, c, inter);
  const Chunk<T> u = load_chunk<kAligned>(gate + inter, c, inter);
#pragma unroll
  for (int j = 0; j < kVec<T>; ++j) g.v[j] = g.v[j] / (1.0f + expf(-g.v[j])) * u.v[j];  // silu
  store_chunk<kAligned>(out + r * inter, c, inter, g);
}

// One thread per 16-byte chunk of the flat arrays; kAligned is the pointers' alignment, and
// the last chunk goes element by element when count is not a whole number of chunks.
template <class T, bool kAligned>
__global__ void add_kernel(T* x, const T* y, int64_t count) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c * kVec<T> >= count) return;
  auto add = [&](auto full) {
    constexpr bool kFull = decltype(full)::value;
    Chunk<T> a = load_chunk<kFull>(x, c, count);
    const Chunk<T> b = load_chunk<kFull>(y, c, count);
#pragma unroll
    for (int j = 0; j < kVec<T>; ++j) a.v[j] += b.v[j];
    store_chunk<kFull>(x, c, count, a);
  };
  if (kAligned && (c + 1) * kVec<T> <= count)
    add(std::true_type{});
  else
    add(std::false_type{});
}

}  // namespace

void launch_swiglu(const KernelLaunch& k, cudaStream_t s, const void* gate_up, void* out,
                   int64_t rows, int64_t inter, DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "swiglu", [&](auto tag) {
    using T = decltype(tag);
    dispatch_aligned(inter % kVec<T> == 0 && aligned16(gate_up, out), [&](auto aligned) {
      swiglu_kernel<T, decltype(aligned)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<const T*>(gate_up), static_cast<T*>(out), rows, inter);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_add(const KernelLaunch& k, cudaStream_t s, void* x, const void* y, int64_t count,
                DType t) {
  if (k.grid.x == 0) return;
  dispatch_dtype(t, "add", [&](auto tag) {
    using T = decltype(tag);
    dispatch_aligned(aligned16(x, y), [&](auto aligned) {
      add_kernel<T, decltype(aligned)::value><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
          static_cast<T*>(x), static_cast<const T*>(y), count);
    });
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
