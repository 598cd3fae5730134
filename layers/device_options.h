// What a backend needs to open this rank's device. The registry that picks a backend by
// name (harness/backends/registry.h) passes it to the backend's constructor.
#pragma once
#include <string>

namespace tpb {

struct DeviceOptions {
  std::string backend = "cpu";  // "cpu" | "cuda"
  int local_rank = 0;           // rank among the ranks on this host (CUDA: selects the GPU)
  int local_size = 1;
  int device_index = -1;  // CUDA: the GPU the harness picked (-1: local_rank % visible GPUs)
  double memory_budget_bytes = 0;  // 0 = what the device has
  int blas_threads = 1;
  std::string attention = "native";  // cuda: native | cudnn (layers/cuda/plan/sdpa_plan.h)
};

}  // namespace tpb
