// Which CUDA runtime cudnn-frontend loads. Its shim dlopens its own libcudart, trying
// libcudart.so.12 before .13 and keeping the first it finds; beside PyTorch's wheels both are on
// the path, and a CUDA 12 runtime would drive this CUDA 13 binary's streams. Host only.
#pragma once
#include <cstdlib>
#include <string>

namespace tpb {

inline constexpr const char* kFrontendCudartVar = "CUDNN_FRONTEND_CUDART_LIB_NAME";

// The runtime this binary links: `loaded_path` (the file dladdr names for one of its cudart
// symbols) when it is a libcudart, else the soname of the major it was built with
// (CUDART_VERSION 13000: "libcudart.so.13"), which dlopen resolves to the copy already loaded.
inline std::string frontend_cudart(const char* loaded_path, int cudart_version) {
  const std::string p = loaded_path ? loaded_path : "";
  const std::string file = p.substr(p.find_last_of('/') + 1);  // npos + 1 = 0: no folder
  if (file.rfind("libcudart.so", 0) == 0) return p;
  return "libcudart.so." + std::to_string(cudart_version / 1000);
}

// Sets CUDNN_FRONTEND_CUDART_LIB_NAME (the frontend's own override, read when it first loads
// the runtime) to frontend_cudart(...), unless the user set it. Returns the value in force.
inline std::string pin_frontend_cudart(const char* loaded_path, int cudart_version) {
  if (const char* set = std::getenv(kFrontendCudartVar); set && *set) return set;
  const std::string name = frontend_cudart(loaded_path, cudart_version);
  setenv(kFrontendCudartVar, name.c_str(), 1);
  return name;
}

}  // namespace tpb
