// What `tpbench info` says about cuDNN attention before any run, without a GPU: whether this
// binary was built with cudnn-frontend (so --attention cudnn can run), and whether cuDNN 9 can
// be loaded here, with the version its cudnnGetVersion reports.
#pragma once
#include <cstddef>
#include <string>

namespace tpb {

// cudnn-frontend's version this binary was built with ("1.32.0"), or "" for the build without it
// (defined beside CudnnSdpa: cudnn_sdpa.cc or cudnn_sdpa_none.cc).
std::string cudnn_frontend_built();

// The library CudnnSdpa loads.
inline constexpr const char* kCudnnLibrary = "libcudnn.so.9";

struct CudnnRuntime {
  std::string version;  // "9.15.0"; "" when not found
  std::string note;     // the library loaded, or why not (dlerror)
};

// dlopen(library), cudnnGetVersion, dlclose: nothing stays loaded and no GPU is touched.
CudnnRuntime probe_cudnn_runtime(const char* library = kCudnnLibrary);

// cudnnGetVersion's number as text: major * 10000 + minor * 100 + patch from cuDNN 9 on
// (91500 -> 9.15.0), major * 1000 + minor * 100 + patch before (8907 -> 8.9.7).
std::string cudnn_version_text(std::size_t v);

}  // namespace tpb
