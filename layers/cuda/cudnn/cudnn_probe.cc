// probe_cudnn_runtime: a plain dlopen of the library CudnnSdpa would load, no CUDA call.
#include "layers/cuda/cudnn/cudnn_probe.h"

#include <dlfcn.h>

namespace tpb {

std::string cudnn_version_text(std::size_t v) {
  const std::size_t major = v >= 90000 ? v / 10000 : v / 1000;
  const std::size_t minor = v >= 90000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

CudnnRuntime probe_cudnn_runtime(const char* library) {
  dlerror();
  void* h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return {"", e ? e : std::string(library) + ": not loadable"};
  }
  using GetVersion = std::size_t (*)();
  auto get = reinterpret_cast<GetVersion>(dlsym(h, "cudnnGetVersion"));
  CudnnRuntime r;
  if (get) {
    r = {cudnn_version_text(get()), library};
  } else {
    r.note = std::string(library) + ": no cudnnGetVersion";
  }
  dlclose(h);
  return r;
}

}  // namespace tpb
