// Correctness of the CUDA ops against the host fp32 reference, one op at a time: each op's
// GPU inputs are downloaded and fed to the reference, so errors do not compound and a failure
// names the op. Used by the GPU device check.
#pragma once
#include <cstdint>

#include "layers/cuda/cuda_device.h"

namespace tpb {

struct CheckShape {
  const char* name;
  int64_t hidden, q_heads, kv_heads, head_dim, inter;
};

// Normalized max error (max |gpu - ref| / max |ref|) allowed per dtype: fp32 covers
// accumulation order and fp32 RoPE angles; bf16/fp16 cover one rounding of each op's output
// (2^-9, 2^-11 relative) with margin.
double check_tolerance(DType t);

// Fill: every element equals fill_value() rounded once to the dtype, bit for bit (also for a
// shard written at an offset with a leading dimension). Returns the number of mismatches.
int64_t check_fill(CudaDevice& dev, DType t);

// Runs one layer's 12 compute ops with per-op checks; prints a line per op. Returns the
// number of ops over tolerance. `n` is the context (decode) or prompt length (prefill).
int check_layer(CudaDevice& dev, const CheckShape& s, bool prefill, int64_t batch, int64_t n,
                DType t);

}  // namespace tpb
