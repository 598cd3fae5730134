// The input side of an FP8 GEMM (plan_gemm_fp8): the per-tensor absolute maximum of a bf16 or
// fp16 tensor, then its e4m3 copy at scale = max / 448, as vLLM's dynamic per-tensor
// quantisation runs before each FP8 matmul of an unquantised checkpoint. Also the e4m3 fill
// of the weights. Conversions saturate to e4m3's finite range and round to nearest even
// (cuda_fp8.h), so the host reference can rebuild every byte.
#include <cuda_fp8.h>

#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

constexpr int kWarps = kElementwiseThreads / 32;

// The block's maximum of a non-negative v, in thread 0.
__device__ float block_max(float v) {
  __shared__ float part[kWarps];
  v = warp_max(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < kWarps ? part[lane] : 0.f;
  return warp == 0 ? warp_max(v) : 0.f;
}

// Grid-stride over 16-byte chunks (n % kVec<T> == 0, 16-byte aligned: the launcher checks).
// Non-negative floats order as their bit patterns, so atomicMax on the bits is a float max.
template <class T>
__global__ void fp8_amax_kernel(const T* x, int64_t chunks, Fp8QuantState* st) {
  float m = 0.f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += stride) {
    const Chunk<T> v = load_chunk<true>(x, c, chunks * kVec<T>);
#pragma unroll
    for (int j = 0; j < kVec<T>; ++j) m = fmaxf(m, fabsf(v.v[j]));
  }
  m = block_max(m);
  if (threadIdx.x == 0) atomicMax(&st->amax_bits, __float_as_uint(m));
}

// Every block reads the maximum before it takes a ticket, so the last block to take one can
// re-arm the state (maximum and count to 0) for the next GEMM without a memset launch.
template <class T>
__global__ void fp8_quant_kernel(const T* x, int64_t chunks, Fp8QuantState* st,
                                 __nv_fp8_storage_t* q) {
  const float amax = __uint_as_float(st->amax_bits);
  const float scale = amax > 0.f ? amax / kFp8E4m3Max : 1.f, inv = 1.f / scale;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += stride) {
    const Chunk<T> v = load_chunk<true>(x, c, chunks * kVec<T>);
    __nv_fp8_storage_t out[kVec<T>];
#pragma unroll
    for (int j = 0; j < kVec<T>; ++j)
      out[j] = __nv_cvt_float_to_fp8(v.v[j] * inv, __NV_SATFINITE, __NV_E4M3);
    if constexpr (kVec<T> == 8) {
      uint2 raw;
      memcpy(&raw, out, sizeof(raw));
      reinterpret_cast<uint2*>(q)[c] = raw;
    } else {
      uint32_t raw;
      memcpy(&raw, out, sizeof(raw));
      reinterpret_cast<uint32_t*>(q)[c] = raw;
    }
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (blockIdx.x == 0) st->scale = scale;
  __threadfence();
  if (atomicAdd(&st->done, 1u) == gridDim.x - 1) {
    st->amax_bits = 0;
    st->done = 0;
  }
}

__global__ void fill_fp8_kernel(__nv_fp8_storage_t* dst, FillSpec f) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= f.rows * f.cols) return;
  const int64_t i = idx / f.cols, j = idx % f.cols;
  dst[f.dst_offset + i * f.dst_ld + j] =
      __nv_cvt_float_to_fp8(fill_value(f, i, j) / fp8_fill_scale(f), __NV_SATFINITE, __NV_E4M3);
}

template <class F>
void dispatch_act(DType t, F&& f) {
  if (t == DType::bf16) return f(__nv_bfloat16{});
  if (t == DType::fp16) return f(__half{});
  throw BadInput(std::string("--dtype: fp8 GEMMs take bf16 or fp16 inputs, not ") + dtype_name(t));
}

void require_aligned(const void* p, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % kVectorBytes != 0)
    throw BackendError(std::string("gemm_fp8: ") + what + " is not 16-byte aligned");
}

}  // namespace

void launch_fp8_amax(const KernelLaunch& k, cudaStream_t s, const void* x, int64_t n, DType t,
                     Fp8QuantState* st) {
  require_aligned(x, "the input");
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    fp8_amax_kernel<T>
        <<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(static_cast<const T*>(x), n / kVec<T>, st);
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_fp8_quant(const KernelLaunch& k, cudaStream_t s, const void* x, int64_t n, DType t,
                      Fp8QuantState* st, void* q) {
  require_aligned(q, "the quantised copy");
  dispatch_act(t, [&](auto tag) {
    using T = decltype(tag);
    fp8_quant_kernel<T><<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
        static_cast<const T*>(x), n / kVec<T>, st, static_cast<__nv_fp8_storage_t*>(q));
  });
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_fill_fp8(const KernelLaunch& k, cudaStream_t s, void* dst, const FillSpec& f) {
  if (k.grid.x == 0) return;
  fill_fp8_kernel<<<to_dim3(k.grid), to_dim3(k.block), 0, s>>>(
      static_cast<__nv_fp8_storage_t*>(dst), f);
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
