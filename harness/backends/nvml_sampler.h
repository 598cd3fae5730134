// NVML telemetry behind the TelemetrySampler interface, for the registry's cuda entry. Built
// in CUDA builds only (harness/backends/CMakeLists.txt).
#pragma once
#include <memory>

#include "harness/backends/telemetry.h"

namespace tpb {

// `dev` is a CudaDevice (the registry passes only its own backend's devices).
std::unique_ptr<TelemetrySampler> make_nvml_sampler(Device& dev);

}  // namespace tpb
