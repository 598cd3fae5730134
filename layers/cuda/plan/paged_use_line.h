// The kernel_choices line that says which kernels ran serve's mixed-step attention under
// --attention cudnn (layers/cuda/cuda_device.cc writes it; launch/device_table.py reads it to
// keep a point whose paged graph cuDNN refused out of the cuDNN set). Host only.
#pragma once
#include <cstdint>
#include <string>

namespace tpb {

// "mixed-step attention: cuDNN paged C calls, native N calls", and when N > 0
// " (cuDNN refused the step's paged graph: <why>)".
inline std::string paged_use_line(int64_t cudnn_calls, int64_t native_calls,
                                  const std::string& why) {
  std::string line = "mixed-step attention: cuDNN paged " + std::to_string(cudnn_calls) +
                     " calls, native " + std::to_string(native_calls) + " calls";
  if (native_calls > 0) line += " (cuDNN refused the step's paged graph: " + why + ")";
  return line;
}

}  // namespace tpb
