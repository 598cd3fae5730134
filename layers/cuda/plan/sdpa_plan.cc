#include "layers/cuda/plan/sdpa_plan.h"

#include <cmath>

#include "base/errors.h"

namespace tpb {

const char* attn_impl_name(AttnImpl a) {
  return a == AttnImpl::cudnn ? "cudnn" : "native";
}

AttnImpl parse_attn_impl(const std::string& name, const std::string& field) {
  if (name == "native") return AttnImpl::native;
  if (name == "cudnn") return AttnImpl::cudnn;
  throw BadInput(field + ": expected native or cudnn, got '" + name + "'");
}

bool sdpa_runs(AttnImpl a, DType t) {
  return a == AttnImpl::cudnn && (t == DType::bf16 || t == DType::fp16);
}

namespace {

// Row-major [batch][s][heads][head_dim] storage whose rows are `row` elements apart and
// sequences `seq_stride` apart, viewed as [B, H, S, D].
SdpaTensor view(int64_t batch, int64_t heads, int64_t s, int64_t head_dim, int64_t row,
                int64_t seq_stride) {
  return {{batch, heads, s, head_dim}, {seq_stride, head_dim, row, 1}};
}

SdpaLayout layout(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                  int64_t max_ctx, int64_t s_q, int64_t s_kv) {
  if (kv_heads <= 0 || q_heads % kv_heads != 0)
    throw BadInput("attention: q_heads (" + std::to_string(q_heads) +
                   ") must be a multiple of kv_heads (" + std::to_string(kv_heads) + ")");
  if (s_kv < 1 || s_kv > max_ctx)
    throw BadInput("attention: " + std::to_string(s_kv) + " keys do not fit the cache of " +
                   std::to_string(max_ctx));
  const int64_t qkv_row = (q_heads + 2 * kv_heads) * head_dim, kv_row = kv_heads * head_dim;
  SdpaLayout l;
  l.q = view(batch, q_heads, s_q, head_dim, qkv_row, s_q * qkv_row);
  l.k = view(batch, kv_heads, s_kv, head_dim, kv_row, max_ctx * kv_row);
  l.v = l.k;
  l.o = view(batch, q_heads, s_q, head_dim, q_heads * head_dim, s_q * q_heads * head_dim);
  l.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  return l;
}

}  // namespace

SdpaLayout sdpa_prefill_layout(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                               int64_t max_ctx, int64_t seq) {
  SdpaLayout l = layout(batch, q_heads, kv_heads, head_dim, max_ctx, seq, seq);
  l.causal = true;
  return l;
}

SdpaLayout sdpa_decode_layout(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                              int64_t max_ctx, int64_t ctx_len) {
  return layout(batch, q_heads, kv_heads, head_dim, max_ctx, 1, ctx_len);
}

KernelLaunch plan_attention_sdpa(const SdpaLayout& l, DType t) {
  const double b = dtype_bytes(t);
  const double batch = static_cast<double>(l.q.dim[0]), q_heads = static_cast<double>(l.q.dim[1]);
  const double kv_heads = static_cast<double>(l.k.dim[1]), d = static_cast<double>(l.q.dim[3]);
  const double s_q = static_cast<double>(l.q.dim[2]), s_kv = static_cast<double>(l.k.dim[2]);
  const double pairs = l.causal ? s_q * (s_q + 1) / 2.0 : s_q * s_kv;
  KernelLaunch k;
  k.op = Op::attention;
  k.kernel = "cudnn_sdpa_fprop";
  k.grid.x = k.block.x = 0;
  k.flops = 4.0 * d * pairs * batch * q_heads;
  k.bytes_read = batch * d * b * (s_q * q_heads + 2.0 * s_kv * kv_heads);
  k.bytes_written = batch * s_q * q_heads * d * b;
  return k;
}

}  // namespace tpb
