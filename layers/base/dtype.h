// Element types: a run-time axis (never a build-time choice), with their sizes and names.
#pragma once
#include <cstddef>
#include <string>

namespace tpb {

enum class DType { fp32, bf16, fp16, fp8 };

inline std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::fp32:
      return 4;
    case DType::bf16:
    case DType::fp16:
      return 2;
    case DType::fp8:
      return 1;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
  }
  return "?";
}

// Throws BadInput naming `field` when `s` is not a dtype name.
DType parse_dtype(const std::string& s, const std::string& field);

}  // namespace tpb
