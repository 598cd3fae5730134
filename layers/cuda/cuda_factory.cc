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
  // The harness picked the GPU before MPI_Init (harness/backends/device_setup.h); without a
  // pick (a caller that opens a device alone) the node-local rank picks it the same way.
  const int index = o.device_index >= 0 ? o.device_index : o.local_rank % n;
  if (index >= n)
    throw BadInput("--backend cuda: GPU " + std::to_string(index) + " was picked but only " +
                   std::to_string(n) + " are visible");
  return std::make_unique<CudaDevice>(o, index);
}

std::string cuda_select_device(int index) {
  // Since CUDA 12 cudaSetDevice makes the primary context, on this GPU rather than GPU 0.
  if (cudaSetDevice(index) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    throw BadInput("--backend cuda: cannot use GPU " + std::to_string(index) +
                   " (cudaSetDevice: " + cudaGetErrorName(e) + ")");
  }
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), index) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return bus;
}

}  // namespace tpb
