// The ops of one TP transformer layer, in execution order. The cost model prices each one,
// the step driver stamps each one, and the CUDA launch plan maps kernels onto them.
#pragma once
#include <cstdint>

namespace tpb {

enum class Op : uint8_t {
  rmsnorm_attn,    // x -> xn                     (compute)
  qkv_proj,        // column-parallel GEMM         (compute)
  rope,            // rotary on local q and k      (compute)
  kv_write,        // new k, v into the KV cache   (compute)
  attention,       // decode or causal prefill     (compute)
  o_proj,          // row-parallel GEMM            (compute)
  allreduce_attn,  // sum of partial O outputs     (collective)
  residual_attn,   // x += o                       (compute)
  rmsnorm_mlp,     //                              (compute)
  gate_up_proj,    // column-parallel GEMM         (compute)
  swiglu,          //                              (compute)
  down_proj,       // row-parallel GEMM            (compute)
  allreduce_mlp,   // sum of partial down outputs  (collective)
  residual_mlp,    //                              (compute)
  injected,        // extra compute from --inject slowdown / jitter (counted as compute)
  step,            // bounds a whole step; neither compute nor collective
  count
};

inline constexpr int kOpsPerLayer = 14;  // rmsnorm_attn .. residual_mlp

inline bool op_is_collective(Op op) {
  return op == Op::allreduce_attn || op == Op::allreduce_mlp;
}

inline const char* op_name(Op op) {
  switch (op) {
    case Op::rmsnorm_attn:
      return "rmsnorm_attn";
    case Op::qkv_proj:
      return "qkv_proj";
    case Op::rope:
      return "rope";
    case Op::kv_write:
      return "kv_write";
    case Op::attention:
      return "attention";
    case Op::o_proj:
      return "o_proj";
    case Op::allreduce_attn:
      return "allreduce_attn";
    case Op::residual_attn:
      return "residual_attn";
    case Op::rmsnorm_mlp:
      return "rmsnorm_mlp";
    case Op::gate_up_proj:
      return "gate_up_proj";
    case Op::swiglu:
      return "swiglu";
    case Op::down_proj:
      return "down_proj";
    case Op::allreduce_mlp:
      return "allreduce_mlp";
    case Op::residual_mlp:
      return "residual_mlp";
    case Op::injected:
      return "injected";
    case Op::step:
      return "step";
    case Op::count:
      break;
  }
  return "?";
}

}  // namespace tpb
