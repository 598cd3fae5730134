// The verb backend of measured ranks: every MPI rank drives one Device (cpu, cuda) and its
// collectives go through the transport the spec names.
#pragma once
#include <memory>

#include "harness/verbs/seam/verb_backend.h"
#include "layers/device_options.h"

namespace tpb {

// Makes this rank's Device through harness/backends/registry.h (BadInput when it cannot).
std::unique_ptr<VerbBackend> open_device_backend(const DeviceOptions& o);

}  // namespace tpb
