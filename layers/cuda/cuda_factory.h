// Entry point of the CUDA backend for the registry (harness/backends/registry.cc), which lists
// it in CUDA builds only.
#pragma once
#include <memory>
#include <string>

#include "layers/device.h"
#include "layers/device_options.h"

namespace tpb {

// Opens o.device_index, or local_rank % (visible GPUs) when the harness picked none. Throws
// BadInput when no GPU or driver is visible, naming what cudaGetDeviceCount said.
std::unique_ptr<Device> make_cuda_device(const DeviceOptions& o);

// Number of visible GPUs, 0 when none or no driver (never throws).
int cuda_device_count() noexcept;

// Makes GPU `index` current in this process (its primary context is made there) and returns
// its PCI bus id ("" when the driver will not say). Throws BadInput when the GPU cannot be used.
std::string cuda_select_device(int index);

}  // namespace tpb
