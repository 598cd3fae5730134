// Parses a dtype name from the CLI or a config; the message names the field so the user can fix it.
#include "layers/base/dtype.h"

#include "layers/base/errors.h"

namespace tpb {

DType parse_dtype(const std::string& s, const std::string& field) {
  // Walk the enum through dtype_name() so the accepted spellings cannot drift from the printed
  // ones.
  for (DType t : {DType::fp32, DType::bf16, DType::fp16, DType::fp8}) {
    if (s == dtype_name(t)) return t;
  }
  throw BadInput(field + ": unknown dtype '" + s + "' (expected fp32|bf16|fp16|fp8)");
}

}  // namespace tpb
