// The verb backend of --backend model: virtual ranks in this process, priced by the cost model
// and NCCL's tuning model on a topology preset's fabric (harness/drive/model).
#pragma once
#include <memory>

#include "harness/verbs/seam/verb_backend.h"
#include "layers/device_options.h"

namespace tpb {

// Opens nothing: each call loads the fabric its spec names (a sweep may have several).
std::unique_ptr<VerbBackend> open_model_backend(const DeviceOptions& o);

}  // namespace tpb
