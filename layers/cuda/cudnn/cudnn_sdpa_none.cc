// The build without cudnn-frontend (launch/deps.sh fetches it; CMake looks for it in .deps/):
// `--attention cudnn` is refused in one line when the device opens.
#include "base/errors.h"
#include "layers/cuda/cudnn/cudnn_probe.h"
#include "layers/cuda/cudnn/cudnn_sdpa.h"

namespace tpb {

struct CudnnSdpa::Impl {};

CudnnSdpa::CudnnSdpa(cudaStream_t stream) {
  (void)stream;
  throw BadInput(
      "--attention: cudnn needs a build with cudnn-frontend (run launch/deps.sh, which fetches "
      "it into .deps/, then configure again); this one has the native kernels only");
}

CudnnSdpa::~CudnnSdpa() = default;

int64_t CudnnSdpa::workspace_bytes(const SdpaLayout& l, DType t) {
  (void)l, (void)t;
  return 0;
}

void CudnnSdpa::run(const SdpaLayout& l, DType t, const void* q, const void* k, const void* v,
                    void* o, void* workspace) {
  (void)l, (void)t, (void)q, (void)k, (void)v, (void)o, (void)workspace;
}

int64_t CudnnSdpa::paged_workspace_bytes(const SdpaPagedLayout& l, DType t) {
  (void)l, (void)t;
  return 0;
}

void CudnnSdpa::run_paged(const SdpaPagedLayout& l, const SdpaPagedMeta& m, DType t,
                          const void* qkv, const void* k_cache, const void* v_cache, void* o,
                          const int32_t* meta, void* workspace) {
  (void)l, (void)m, (void)t, (void)qkv, (void)k_cache, (void)v_cache, (void)o, (void)meta,
      (void)workspace;
}

PagedPadding CudnnSdpa::paged_padding() const {
  return PagedPadding::none;
}

std::string CudnnSdpa::describe() const {
  return "";
}

CudnnSdpa::Builds CudnnSdpa::builds() const {
  return {};
}

std::string cudnn_frontend_built() {
  return "";
}

}  // namespace tpb
