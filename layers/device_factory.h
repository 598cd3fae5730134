// Picks a Device backend by name at run time (ggml-style registry); callers test caps.
#pragma once
#include <memory>
#include <string>

#include "layers/device.h"

namespace tpb {

struct DeviceOptions {
  std::string backend = "cpu";  // "cpu" | "cuda"
  int local_rank = 0;           // rank among the ranks on this host (CUDA: selects the GPU)
  int local_size = 1;
  double memory_budget_bytes = 0;  // 0 = what the device has
  int blas_threads = 1;
};

// Throws BadInput when the backend is unknown, not built in, or has no device here.
std::unique_ptr<Device> make_device(const DeviceOptions& o);

// Names of the backends compiled into this binary.
std::vector<std::string> built_backends();

}  // namespace tpb
