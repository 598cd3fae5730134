// Element types: a run-time axis (never a build-time choice), with their sizes and names.
#pragma once
#include <array>
#include <cstddef>
#include <string>

#include "base/enum_names.h"

namespace tpb {

enum class DType { fp32, bf16, fp16, fp8 };
inline constexpr std::size_t kDTypeCount = 4;

inline constexpr std::array<const char*, kDTypeCount> kDTypeNames{"fp32", "bf16", "fp16", "fp8"};
inline constexpr std::array<std::size_t, kDTypeCount> kDTypeBytes{4, 2, 2, 1};
// nccl-tests' names (its -d and its `type` column), so its users' flags and parsers work here.
inline constexpr std::array<const char*, kDTypeCount> kDTypeNcclNames{"float", "bfloat16", "half",
                                                                      "f8e4m3"};

inline std::size_t dtype_bytes(DType t) {
  return kDTypeBytes.at(static_cast<std::size_t>(t));
}

inline const char* dtype_name(DType t) {
  return enum_name(kDTypeNames, t);
}

inline const char* dtype_nccl_name(DType t) {
  return enum_name(kDTypeNcclNames, t);
}

// Throws BadInput naming `field` when `s` is not a dtype name.
DType parse_dtype(const std::string& s, const std::string& field);
// Also takes nccl-tests' names (float, half, bfloat16, f8e4m3).
DType parse_dtype_or_nccl(const std::string& s, const std::string& field);

}  // namespace tpb
