// FP8 GEMMs on the GPU (Device::gemm_fp8; issue 30, item 5), for the device check.
#pragma once

#include "layers/cuda/cuda_device.h"

namespace tpb {

// At Llama-3.1-8B's four GEMM shapes: the result against a host reference rebuilt from the very
// e4m3 bytes the GPU holds (the weights as filled; the input quantised on the host exactly as
// the device does, from its own maximum), after a first GEMM on an input a thousand times
// larger (so a maximum left armed from it would ruin the second); then the FP8 path's time
// (its three launches) against the bf16 GEMM of the same shape. Prints a line per shape and
// returns the number over tolerance; 0 with a SKIP line where the GPU has no FP8 tensor cores.
int check_fp8_gemm(CudaDevice& dev, bool quick);

}  // namespace tpb
