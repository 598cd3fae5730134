// make_cuda_device: picks the rank's GPU and turns "no GPU here" into a clear BadInput.
#include "layers/cuda/cuda_factory.h"

#include <cuda_runtime_api.h>

#include <string>

#include "base/errors.h"
#include "layers/cuda/cuda_device.h"

namespace tpb {

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Device> make_cuda_device(const DeviceOptions& o) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n <= 0) {
    const std::string why = e != cudaSuccess
                                ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e)
                                : std::string("0 devices");
    (void)cudaGetLastError();
    throw BadInput("--backend cuda: no CUDA device is visible (cudaGetDeviceCount: " + why + ")");
  }
  if (o.local_rank < 0) throw BadInput("--backend cuda: local rank must be >= 0");
  // Several ranks may share a GPU (functional tests); the usual launch has one rank per GPU.
  return std::make_unique<CudaDevice>(o, o.local_rank % n);
}

}  // namespace tpb
