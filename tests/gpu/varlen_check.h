// Correctness of the CUDA backend's mixed-step ops (tpbench serve) against a host fp32
// reference written here from layers/device.h's semantics: rope at each token's position, K and
// V through a shuffled block table, paged causal attention for a ragged batch (decodes at
// different contexts beside a prefill chunk that has a cached part), and the row argmax with
// ties. Used by the GPU device check.
#pragma once
#include "layers/cuda/cuda_device.h"
#include "tests/gpu/layer_check.h"

namespace tpb {

// Prints a line per op; returns the number of ops over tolerance (argmax: any wrong column).
int check_varlen(CudaDevice& dev, const CheckShape& s, DType t);

}  // namespace tpb
