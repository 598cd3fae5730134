// Parses a dtype name from the CLI or a config; the message names the field so the user can fix it.
#include "base/dtype.h"

#include "base/errors.h"

namespace tpb {

DType activation_dtype(DType weights) {
  return weights == DType::fp8 ? DType::bf16 : weights;
}

DTypes::DTypes(DType run, std::optional<DType> kv_dtype)
    : weights(run),
      activations(activation_dtype(run)),
      kv(kv_dtype.value_or(activation_dtype(run))),
      allreduce(activation_dtype(run)) {}

DType parse_dtype(const std::string& s, const std::string& field) {
  if (auto t = enum_from_name<DType>(kDTypeNames, s)) return *t;
  throw BadInput(field + ": unknown dtype '" + s + "' (expected fp32|bf16|fp16|fp8)");
}

DType parse_dtype_or_nccl(const std::string& s, const std::string& field) {
  if (auto t = enum_from_name<DType>(kDTypeNcclNames, s)) return *t;
  if (auto t = enum_from_name<DType>(kDTypeNames, s)) return *t;
  throw BadInput(field + ": unknown dtype '" + s +
                 "' (expected float|half|bfloat16|f8e4m3 or fp32|fp16|bf16|fp8)");
}

}  // namespace tpb
