// Attention through cuDNN's fused scaled-dot-product attention (`--attention cudnn`): one
// flash-style kernel per call, no scores in memory, as serving engines run attention. Host
// only, as the rest of the launch plan: what the plan counts of that kernel, and tpbench's own
// buffers as the [B, H, S, D] views with strides that cuDNN reads, so nothing is copied.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "base/dtype.h"
#include "layers/cuda/plan/launch_plan.h"

namespace tpb {

const char* attn_impl_name(AttnImpl a);
// Throws BadInput("<field>: ...") for a name other than native or cudnn.
AttnImpl parse_attn_impl(const std::string& name, const std::string& field);

// cuDNN's SDPA runs bf16 and fp16 inputs only; an fp32 step keeps the native kernels.
bool sdpa_runs(AttnImpl a, DType t);

// One tensor as cuDNN's graph takes it: dims and strides in elements, [B, H, S, D].
struct SdpaTensor {
  std::array<int64_t, 4> dim{}, stride{};
};

// The four tensors of one call and what the kernel is asked to do. q points into the qkv rows
// [tokens, (q_heads + 2 kv_heads) * head_dim] (its first q_heads * head_dim columns), k and v
// at the caches [batch, max_ctx, kv_heads, head_dim], o at the output rows
// [tokens, q_heads * head_dim].
struct SdpaLayout {
  SdpaTensor q, k, v, o;
  bool causal = false;  // prefill: query i attends to keys [0, i] (top-left aligned, s_q == s_kv)
  float scale = 0;      // 1 / sqrt(head_dim)
};

// Prefill of `seq` tokens per sequence over cache positions [0, seq).
SdpaLayout sdpa_prefill_layout(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                               int64_t max_ctx, int64_t seq);
// Decode: one query per sequence over cache positions [0, ctx_len).
SdpaLayout sdpa_decode_layout(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                              int64_t max_ctx, int64_t ctx_len);

// The one launch, with the work the cost model counts for attention: 4 head_dim FLOPs per
// (query head, attended pair), the causal pairs in prefill; Q, K and V read and O written
// once. cuDNN picks its grid (0 here) and keeps the scores on chip (no scratch).
KernelLaunch plan_attention_sdpa(const SdpaLayout& l, DType t);

}  // namespace tpb
