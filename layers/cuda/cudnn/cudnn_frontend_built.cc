// The build with cudnn-frontend: its version from the header alone (cudnn_probe.h).
#include <cudnn_frontend_version.h>

#include "layers/cuda/cudnn/cudnn_probe.h"

namespace tpb {

std::string cudnn_frontend_built() {
  const auto n = [](int x) { return std::to_string(x); };
  return n(CUDNN_FRONTEND_MAJOR_VERSION) + "." + n(CUDNN_FRONTEND_MINOR_VERSION) + "." +
         n(CUDNN_FRONTEND_PATCH_VERSION);
}

}  // namespace tpb
