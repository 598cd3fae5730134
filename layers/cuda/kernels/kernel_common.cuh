// Device helpers shared by the kernels: element conversion (storage dtype <-> fp32 math),
// warp reductions, dtype dispatch and plan-to-launch conversion. Included by .cu files only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "layers/base/dtype.h"
#include "layers/base/errors.h"
#include "layers/cuda/plan/launch_plan.h"

namespace tpb::cuda_kernels {

// All arithmetic is fp32; storage is T. The conversions round to nearest even, as the host
// reference does (upload converts with the same functions).
__device__ __forceinline__ float to_f(float x) {
  return x;
}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f(__half x) {
  return __half2float(x);
}

// By return type, so a template: from_f<T>(x).
template <class T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}

__device__ __forceinline__ float warp_sum(float v, unsigned mask = 0xffffffffu) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v, unsigned mask = 0xffffffffu) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(mask, v, o));
  return v;
}

// Calls f(T{}) with the storage type of `t`; fp8 has no kernels (caps do not list it).
template <class F>
void dispatch_dtype(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::fp32:
      f(float{});
      return;
    case DType::bf16:
      f(__nv_bfloat16{});
      return;
    case DType::fp16:
      f(__half{});
      return;
    case DType::fp8:
      break;
  }
  throw BadInput(std::string("--dtype: the cuda backend has no ") + what + " kernel for " +
                 dtype_name(t));
}

// Rotary embedding of pair (i, i + d/2) of head `h` at position `pos`: the pair rotates by
// pos * theta^(-2i/d) (Llama rotate-half). Shared by the fixed and the varlen rope kernels.
template <class T>
__device__ __forceinline__ void rope_pair(T* h, int64_t i, int64_t half, float pos,
                                          int64_t head_dim, float theta) {
  const float inv_freq = powf(theta, -static_cast<float>(2 * i) / static_cast<float>(head_dim));
  float sn, cs;
  sincosf(pos * inv_freq, &sn, &cs);  // full-precision: angles reach thousands of radians
  const float x0 = to_f(h[i]);
  const float x1 = to_f(h[i + half]);
  h[i] = from_f<T>(x0 * cs - x1 * sn);
  h[i + half] = from_f<T>(x1 * cs + x0 * sn);
}

inline dim3 to_dim3(const Dim3i& d) {
  return dim3(static_cast<unsigned>(d.x), static_cast<unsigned>(d.y), static_cast<unsigned>(d.z));
}

}  // namespace tpb::cuda_kernels
