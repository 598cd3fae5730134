// Device helpers shared by the kernels: element conversion (storage dtype <-> fp32 math),
// warp reductions, dtype dispatch and plan-to-launch conversion. Included by .cu files only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/dtype.h"
#include "base/errors.h"
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

// A warp's softmax steps over one head's n scores s[0..n), lane i taking i, i + 32, ...: the
// max of the scores, and each score replaced by e^(s - m) with the warp's sum of them returned.
// The decode kernel's chunk softmax and the varlen kernel's online softmax both take them.
__device__ __forceinline__ float warp_row_max(const float* s, int n, int lane) {
  float m = -INFINITY;
  for (int p = lane; p < n; p += 32) m = fmaxf(m, s[p]);
  return warp_max(m);
}
__device__ __forceinline__ float warp_exp_sum(float* s, int n, float m, int lane) {
  float l = 0.f;
  for (int p = lane; p < n; p += 32) {
    const float e = expf(s[p] - m);
    s[p] = e;
    l += e;
  }
  return warp_sum(l);
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

__device__ __forceinline__ int64_t div_up(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The small kernels move rows in 16-byte chunks: chunk c of a row of n elements holds
// elements [c * V, c * V + V), V = kVec<T> (8 bf16/fp16, 4 fp32). The plans count threads in
// the same chunks (vector_elems in launch_plan.h), so a grid is one thread per chunk whichever
// load path runs. kAligned (checked by the launcher: n % V == 0 and 16-byte aligned pointers)
// makes each chunk one 16-byte load or store; otherwise the chunk goes element by element,
// which also covers a partial last chunk.
template <class T>
inline constexpr int kVec = kVectorBytes / static_cast<int>(sizeof(T));
template <class T>
struct Chunk {
  float v[kVec<T>];  // fp32 values; past the row's end they read as 0
};

template <bool kAligned, class T>
__device__ __forceinline__ Chunk<T> load_chunk(const T* row, int64_t c, int64_t n) {
  constexpr int V = kVec<T>;
  Chunk<T> out;
  if constexpr (kAligned) {
    const uint4 raw = *reinterpret_cast<const uint4*>(row + c * V);
    T e[V];
    memcpy(e, &raw, sizeof(raw));  // a register move, not a copy through memory
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = to_f(e[j]);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) out.v[j] = c * V + j < n ? to_f(row[c * V + j]) : 0.f;
  }
  return out;
}

template <bool kAligned, class T>
__device__ __forceinline__ void store_chunk(T* row, int64_t c, int64_t n, const Chunk<T>& x) {
  constexpr int V = kVec<T>;
  if constexpr (kAligned) {
    T e[V];
#pragma unroll
    for (int j = 0; j < V; ++j) e[j] = from_f<T>(x.v[j]);
    uint4 raw;
    memcpy(&raw, e, sizeof(raw));
    *reinterpret_cast<uint4*>(row + c * V) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (c * V + j < n) row[c * V + j] = from_f<T>(x.v[j]);
  }
}

// A chunk copied as stored (no conversion): the KV cache gets qkv's bits.
template <bool kAligned, class T>
__device__ __forceinline__ void copy_chunk(T* dst, const T* src, int64_t c, int64_t n) {
  constexpr int V = kVec<T>;
  if constexpr (kAligned) {
    *reinterpret_cast<uint4*>(dst + c * V) = *reinterpret_cast<const uint4*>(src + c * V);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j)
      if (c * V + j < n) dst[c * V + j] = src[c * V + j];
  }
}

// Host side: the 16-byte path needs every pointer it touches 16-byte aligned.
template <class... P>
bool aligned16(const P*... p) {
  return ((reinterpret_cast<std::uintptr_t>(p) % kVectorBytes == 0) && ...);
}
// Calls f(std::true_type{}) or f(std::false_type{}): one kernel instantiation per load path.
template <class F>
void dispatch_aligned(bool aligned, F&& f) {
  if (aligned)
    f(std::true_type{});
  else
    f(std::false_type{});
}

// Rotary embedding: element i of a head's first half (x0) and its partner i + d/2 (x1)
// rotate by pos * theta^(-2i/d) (Llama rotate-half).
__device__ __forceinline__ void rope_rotate(float& x0, float& x1, int64_t i, float pos,
                                            int64_t head_dim, float theta) {
  const float inv_freq = powf(theta, -static_cast<float>(2 * i) / static_cast<float>(head_dim));
  float sn, cs;
  sincosf(pos * inv_freq, &sn, &cs);  // full-precision: angles reach thousands of radians
  const float a = x0, b = x1;
  x0 = a * cs - b * sn;
  x1 = b * cs + a * sn;
}

// Pair (i, i + d/2) of head `h` at position `pos`, one element each (the varlen kernel).
template <class T>
__device__ __forceinline__ void rope_pair(T* h, int64_t i, int64_t half, float pos,
                                          int64_t head_dim, float theta) {
  float x0 = to_f(h[i]), x1 = to_f(h[i + half]);
  rope_rotate(x0, x1, i, pos, head_dim, theta);
  h[i] = from_f<T>(x0);
  h[i + half] = from_f<T>(x1);
}

// Chunk c of head `h` (half = d/2 elements a side) rotated in place: chunk c of the first half
// with chunk c of the second. Returns the rotated values (rope_kv_write also caches them).
template <class T>
struct ChunkPair {
  Chunk<T> lo, hi;
};
template <bool kAligned, class T>
__device__ __forceinline__ ChunkPair<T> rope_chunk(T* h, int64_t c, int64_t half, float pos,
                                                   int64_t head_dim, float theta) {
  constexpr int V = kVec<T>;
  ChunkPair<T> p{load_chunk<kAligned>(h, c, half), load_chunk<kAligned>(h + half, c, half)};
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (kAligned || c * V + j < half)
      rope_rotate(p.lo.v[j], p.hi.v[j], c * V + j, pos, head_dim, theta);
  store_chunk<kAligned>(h, c, half, p.lo);
  store_chunk<kAligned>(h + half, c, half, p.hi);
  return p;
}

inline dim3 to_dim3(const Dim3i& d) {
  return dim3(static_cast<unsigned>(d.x), static_cast<unsigned>(d.y), static_cast<unsigned>(d.z));
}

}  // namespace tpb::cuda_kernels
