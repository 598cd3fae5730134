// Device registry: backends by name.
#include "layers/device_factory.h"

#include "layers/base/errors.h"
#include "layers/cpu/cpu_device.h"
#if defined(TPB_HAVE_CUDA)
#include "layers/cuda/cuda_factory.h"
#endif

namespace tpb {

std::vector<std::string> built_backends() {
#if defined(TPB_HAVE_CUDA)
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

std::unique_ptr<Device> make_device(const DeviceOptions& o) {
  if (o.backend == "cpu") return std::make_unique<CpuDevice>(o);
#if defined(TPB_HAVE_CUDA)
  if (o.backend == "cuda") return make_cuda_device(o);
#endif
  throw BadInput("--backend: '" + o.backend + "' is not built into this tpbench (built: " +
                 (built_backends().size() > 1 ? "cpu, cuda" : "cpu") + ")");
}

}  // namespace tpb
