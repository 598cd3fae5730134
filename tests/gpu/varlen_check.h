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

// Serve's paged attention against run's decode attention over the same work: `batch` decoding
// sequences at context `context`, shape `s`, bf16, blocks of 16 positions (a decode-only step:
// the decode kernel reading through the block table). Prints the device time of each per call
// (CUDA events around calls queued back to back) with the GB/s of the K and V they read, and
// the host's cost per call: what the block table costs, and whether a slow serve step is the
// kernel or the host's part of it.
void time_varlen_vs_decode(CudaDevice& dev, const CheckShape& s, int64_t batch, int64_t context);

}  // namespace tpb
