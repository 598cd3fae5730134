// The backend registry: devices, collectives and telemetry picked by name at run time (as
// ggml's backend registry does), and the one translation from a spec to DeviceOptions. The
// tables, and the only test of what this build holds, are in registry.cc.
#pragma once
#include "harness/config/collectives_spec.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "layers/device_factory.h"

namespace tpb {

// The device this rank opens for `spec`: the backend, the GPU picked by the host-local rank,
// the memory budget split between the ranks on the host, and the BLAS threads.
DeviceOptions device_options(const RunSpec& spec, const World& w);
DeviceOptions device_options(const CollectivesSpec& spec, const World& w);

}  // namespace tpb
