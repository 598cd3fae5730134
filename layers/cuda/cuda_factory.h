// Entry point of the CUDA backend for the registry (harness/backends/registry.cc), which lists
// it in CUDA builds only.
#pragma once
#include <memory>

#include "layers/device.h"
#include "layers/device_options.h"

namespace tpb {

// One GPU per rank: local_rank % (visible GPUs). Throws BadInput when no GPU or driver is
// visible, naming what cudaGetDeviceCount said.
std::unique_ptr<Device> make_cuda_device(const DeviceOptions& o);

// Number of visible GPUs, 0 when none or no driver (never throws).
int cuda_device_count() noexcept;

}  // namespace tpb
