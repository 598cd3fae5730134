// Element types: a run-time axis (never a build-time choice), with their sizes and names.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
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

// The element types of one run (issue 32, item 3), each priced at its own width by the cost
// model: the weights (the GEMM matrices); the activations (the residual stream, the norms and
// their gammas, Q and the attention output, every GEMM's input and output, the LM head, whose
// weights FP8 checkpoints leave unquantised); the KV cache; and the all-reduce payload.
// --dtype names the weights. FP8 serving (TensorRT-LLM, vLLM) runs FP8 GEMMs between bf16
// activations and all-reduces, so fp8 weights mean bf16 activations; every other dtype runs
// throughout. The KV cache is --kv-dtype's, or the activations' when it is not given.
struct DTypes {
  DType weights = DType::fp32;
  DType activations = DType::fp32;
  DType kv = DType::fp32;
  DType allreduce = DType::fp32;

  DTypes() = default;
  explicit DTypes(DType run, std::optional<DType> kv_dtype = std::nullopt);
  // One dtype for all four: what the CPU and CUDA backends run.
  bool uniform() const { return weights == activations && kv == weights && allreduce == weights; }
  bool operator==(const DTypes&) const = default;
};

// The activations' (and the all-reduce's) dtype at --dtype `weights`: bf16 for fp8.
DType activation_dtype(DType weights);

// Throws BadInput naming `field` when `s` is not a dtype name.
DType parse_dtype(const std::string& s, const std::string& field);
// Also takes nccl-tests' names (float, half, bfloat16, f8e4m3).
DType parse_dtype_or_nccl(const std::string& s, const std::string& field);

}  // namespace tpb
