// The ops of one TP transformer layer, in execution order. The cost model prices each one,
// the step driver stamps each one, and the CUDA launch plan maps kernels onto them.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "base/enum_names.h"

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
  // A serving step's end (TpModel::step_mixed), once per step after the layers, on the rows
  // of the sequences that sample. `sample` is stamped twice: the local argmax before the
  // gather, and the pick among the gathered candidates after it.
  final_norm,     // sampled rows gathered, RMSNorm  (compute)
  lm_head,        // vocab-parallel GEMM            (compute)
  sample_gather,  // all-gather of (max, column)    (collective)
  sample,         // greedy: local argmax, pick     (compute)
  // --stamps collectives: the compute between two collectives (or a step's edge) stamped as
  // one interval, kept where the backend has no per-op record of the ops inside it.
  compute,   // a run of compute ops           (compute)
  injected,  // extra compute from --inject slowdown / jitter (counted as compute)
  step,      // bounds a whole step; neither compute nor collective
  count
};

inline constexpr int kOpsPerLayer = 14;     // rmsnorm_attn .. residual_mlp
inline constexpr int kOpsPerServeTail = 4;  // final_norm .. sample, once per serving step
inline constexpr int kServeTailStamps = 5;  // their stamps per step (`sample` twice)

inline bool op_is_collective(Op op) {
  return op == Op::allreduce_attn || op == Op::allreduce_mlp || op == Op::sample_gather;
}

// Where a backend fuses element-wise pairs (Device caps().fused_elementwise, stamps coarser than
// ops: TpModel::run_layers), the op whose kernel and stamp also carry `op`, which then has no
// segment of its own; `op` itself where it is never fused.
inline Op fused_into(Op op) {
  switch (op) {
    case Op::kv_write:
      return Op::rope;
    case Op::residual_attn:
      return Op::rmsnorm_mlp;
    case Op::residual_mlp:
      return Op::rmsnorm_attn;
    default:
      return op;
  }
}

inline constexpr std::array<const char*, static_cast<std::size_t>(Op::count)> kOpNames{
    "rmsnorm_attn",   "qkv_proj",      "rope",        "kv_write",     "attention",     "o_proj",
    "allreduce_attn", "residual_attn", "rmsnorm_mlp", "gate_up_proj", "swiglu",        "down_proj",
    "allreduce_mlp",  "residual_mlp",  "final_norm",  "lm_head",      "sample_gather", "sample",
    "compute",        "injected",      "step"};

inline const char* op_name(Op op) {
  return enum_name(kOpNames, op);
}

}  // namespace tpb
