// The backend registry: devices, collectives and telemetry picked by name at run time (as
// ggml's backend registry does), and the one translation from a spec to DeviceOptions. The
// tables, and the only test of what this build holds, are in registry.cc.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/config/collectives_spec.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "layers/device.h"
#include "layers/device_options.h"

namespace tpb {

// Throws BadInput when the backend is unknown, not built in, or has no device here.
std::unique_ptr<Device> make_device(const DeviceOptions& o);

// Names of the backends compiled into this binary.
std::vector<std::string> built_backends();

// The attention libraries this binary has, known without a GPU (what --attention can pick).
struct AttentionLibraries {
  bool native = false;          // the cuda backend's own kernels (--attention native)
  bool cudnn_compiled = false;  // built with cudnn-frontend (--attention cudnn can run)
  std::string cudnn_frontend;   // its version; "" without
  std::string cudnn_runtime;    // cudnnGetVersion of the libcudnn found here; "" when none
  std::string cudnn_note;       // the library loaded, or why none was
};
AttentionLibraries attention_libraries();

// Makes GPU device_for_local_rank(local_rank, visible GPUs) current and records it in `p`
// (index, visible, bus id); on a backend without GPUs, or with none visible, picks nothing and
// p.reason says why. The one place besides the tables that asks whether CUDA is built in.
void pick_gpu(const std::string& backend, int local_rank, DevicePick& p);

// The device this rank opens for `spec`: the backend, the GPU picked by the host-local rank,
// the memory budget split between the ranks on the host, and the BLAS threads.
DeviceOptions device_options(const RunSpec& spec, const World& w);
DeviceOptions device_options(const CollectivesSpec& spec, const World& w);

}  // namespace tpb
