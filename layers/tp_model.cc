// The TP step (Megatron layout): x -> rmsnorm -> QKV(col) -> rope -> kv write -> attention
// -> O(row) -> all_reduce -> +res -> rmsnorm -> gate_up(col) -> swiglu -> down(row)
// -> all_reduce -> +res. Shards are cut from full tensors defined by fill_hash, so any tp
// produces the same mathematical layer.
#include "layers/tp_model.h"

#include <cmath>

#include "layers/timeline.h"

namespace tpb {

namespace {

enum Tensor : int {
  kGammaAttn,
  kQ,
  kK,
  kV,
  kO,
  kGammaMlp,
  kGate,
  kUp,
  kDown,
  kKCache,
  kVCache,
  kInput
};

// Uniform(-a, a) has variance a^2/3; a = sqrt(3/fan_in) keeps projections at unit variance,
// so many layers neither blow up nor vanish in fp32.
float init_scale(int64_t fan_in) {
  return std::sqrt(3.0f / static_cast<float>(fan_in));
}

}  // namespace

TpModel::TpModel(Device& dev, const TpModelConfig& cfg)
    : dev_(dev), cfg_(cfg), sh_(shard_shape(cfg.shape, cfg.tp)) {
  const ModelShape& m = cfg_.shape;
  tokens_ = cfg_.batch * (cfg_.phase == Phase::decode ? 1 : cfg_.prompt);
  max_ctx_ = cfg_.phase == Phase::decode ? cfg_.context + 1 : cfg_.prompt;
  kv0_ = first_kv_head(m, cfg_.tp, cfg_.tp_rank);
  attn_ = AttnShape{cfg_.batch, sh_.q_heads, sh_.kv_heads, m.head_dim, max_ctx_};
  const std::size_t e = dtype_bytes(cfg_.dtype);
  const int64_t h = m.hidden, d = m.head_dim, qkv_w = (sh_.q_heads + 2 * sh_.kv_heads) * d;
  const int64_t kv_elems = cfg_.batch * max_ctx_ * sh_.kv_heads * d;
  layers_.resize(cfg_.layers);
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    LayerBuffers& b = layers_[l];
    b.gamma_attn = dev_.alloc(h * e);
    b.w_qkv = dev_.alloc(qkv_w * h * e);
    b.w_o = dev_.alloc(h * sh_.q_heads * d * e);
    b.gamma_mlp = dev_.alloc(h * e);
    b.w_gate_up = dev_.alloc(2 * sh_.inter * h * e);
    b.w_down = dev_.alloc(h * sh_.inter * e);
    b.k_cache = dev_.alloc(kv_elems * e);
    b.v_cache = dev_.alloc(kv_elems * e);
    fill_layer(l);
  }
  x_ = dev_.alloc(tokens_ * h * e);
  xn_ = dev_.alloc(tokens_ * h * e);
  qkv_ = dev_.alloc(tokens_ * qkv_w * e);
  attn_out_ = dev_.alloc(tokens_ * sh_.q_heads * d * e);
  proj_ = dev_.alloc(tokens_ * h * e);
  gate_up_ = dev_.alloc(tokens_ * 2 * sh_.inter * e);
  act_ = dev_.alloc(tokens_ * sh_.inter * e);
  reset_state();
}

uint64_t TpModel::seed_of(int64_t layer, int tensor) const {
  return mix64(cfg_.seed * 1000003ULL + static_cast<uint64_t>(layer) * 64 + tensor);
}

void TpModel::fill_layer(int64_t l) {
  const ModelShape& m = cfg_.shape;
  const int64_t h = m.hidden, d = m.head_dim;
  const int64_t q0 = cfg_.tp_rank * sh_.q_heads;  // first global query head
  const int64_t i0 = cfg_.tp_rank * sh_.inter;    // first global MLP column
  LayerBuffers& b = layers_[l];
  auto fill = [&](DeviceBuffer& buf, int tensor, float scale, int64_t full_cols, int64_t row0,
                  int64_t rows, int64_t col0, int64_t cols, int64_t dst_ld, int64_t dst_off) {
    dev_.fill(
        buf.get(), cfg_.dtype,
        FillSpec{seed_of(l, tensor), scale, full_cols, row0, rows, col0, cols, dst_ld, dst_off});
  };
  fill(b.gamma_attn, kGammaAttn, 1.0f, h, 0, 1, 0, h, h, 0);
  fill(b.gamma_mlp, kGammaMlp, 1.0f, h, 0, 1, 0, h, h, 0);
  // Column-parallel QKV: local rows are [q | k | v] cut from three full [heads*d, h] tensors.
  const float sh = init_scale(h);
  fill(b.w_qkv, kQ, sh, h, q0 * d, sh_.q_heads * d, 0, h, h, 0);
  fill(b.w_qkv, kK, sh, h, kv0_ * d, sh_.kv_heads * d, 0, h, h, sh_.q_heads * d * h);
  fill(b.w_qkv, kV, sh, h, kv0_ * d, sh_.kv_heads * d, 0, h, h,
       (sh_.q_heads + sh_.kv_heads) * d * h);
  // Row-parallel O: all h output rows, this rank's input columns of the full [h, heads*d].
  fill(b.w_o, kO, init_scale(m.n_heads * d), m.n_heads * d, 0, h, q0 * d, sh_.q_heads * d,
       sh_.q_heads * d, 0);
  // Column-parallel gate and up, fused as [gate rows | up rows].
  fill(b.w_gate_up, kGate, sh, h, i0, sh_.inter, 0, h, h, 0);
  fill(b.w_gate_up, kUp, sh, h, i0, sh_.inter, 0, h, h, sh_.inter * h);
  // Row-parallel down: this rank's input columns of the full [h, intermediate].
  fill(b.w_down, kDown, init_scale(m.intermediate), m.intermediate, 0, h, i0, sh_.inter, sh_.inter,
       0);
}

void TpModel::fill_cache(int64_t l) {
  // The cache is a full [batch*max_ctx, n_kv_heads*d] tensor; this rank holds its KV heads.
  const int64_t d = cfg_.shape.head_dim, full = cfg_.shape.n_kv_heads * d;
  const int64_t rows = cfg_.batch * max_ctx_, w = sh_.kv_heads * d;
  dev_.fill(layers_[l].k_cache.get(), cfg_.dtype,
            FillSpec{seed_of(l, kKCache), 1.0f, full, 0, rows, kv0_ * d, w, w, 0});
  dev_.fill(layers_[l].v_cache.get(), cfg_.dtype,
            FillSpec{seed_of(l, kVCache), 1.0f, full, 0, rows, kv0_ * d, w, w, 0});
}

void TpModel::reset_state() {
  const int64_t h = cfg_.shape.hidden;
  dev_.fill(x_.get(), cfg_.dtype, whole_tensor_fill(seed_of(0, kInput), 1.0f, tokens_, h));
  for (int64_t l = 0; l < cfg_.layers; ++l) fill_cache(l);
  dev_.synchronize();
}

std::vector<float> TpModel::output() const {
  std::vector<float> out(static_cast<std::size_t>(tokens_ * cfg_.shape.hidden));
  dev_.synchronize();
  dev_.download(out.data(), x_.get(), out.size(), cfg_.dtype);
  return out;
}

void TpModel::step(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks) {
  const ModelShape& m = cfg_.shape;
  const DType t = cfg_.dtype;
  const int64_t T = tokens_, h = m.hidden, d = m.head_dim;
  const int64_t qkv_w = (sh_.q_heads + 2 * sh_.kv_heads) * d;
  const bool decode = cfg_.phase == Phase::decode;
  const int64_t tps = decode ? 1 : cfg_.prompt;
  const int64_t pos0 = decode ? cfg_.context : 0;
  const float eps = static_cast<float>(m.rms_eps), theta = static_cast<float>(m.rope_theta);

  // Stamps cost two clock reads; a null timeline (reference runs) costs a branch.
  auto run = [&](Op op, int layer, auto&& body) {
    const std::size_t i = tl ? tl->open(op, layer, step_index) : 0;
    body();
    if (tl) tl->close(i);
  };
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    LayerBuffers& b = layers_[l];
    const int L = static_cast<int>(l);
    run(Op::rmsnorm_attn, L,
        [&] { dev_.rmsnorm(x_.get(), b.gamma_attn.get(), xn_.get(), T, h, eps, t); });
    run(Op::qkv_proj, L, [&] { dev_.gemm(xn_.get(), b.w_qkv.get(), qkv_.get(), T, qkv_w, h, t); });
    run(Op::rope, L, [&] { dev_.rope(qkv_.get(), T, tps, pos0, attn_, theta, t); });
    run(Op::kv_write, L,
        [&] { dev_.kv_write(qkv_.get(), b.k_cache.get(), b.v_cache.get(), tps, pos0, attn_, t); });
    run(Op::attention, L, [&] {
      if (decode)
        dev_.attention_decode(qkv_.get(), b.k_cache.get(), b.v_cache.get(), attn_out_.get(),
                              cfg_.context + 1, attn_, t);
      else
        dev_.attention_prefill(qkv_.get(), b.k_cache.get(), b.v_cache.get(), attn_out_.get(),
                               cfg_.prompt, attn_, t);
    });
    run(Op::o_proj, L,
        [&] { dev_.gemm(attn_out_.get(), b.w_o.get(), proj_.get(), T, h, sh_.q_heads * d, t); });
    if (hooks) hooks->after_block(L, 0, step_index);
    run(Op::allreduce_attn, L,
        [&] { coll.all_reduce(proj_.get(), static_cast<std::size_t>(T * h), t); });
    run(Op::residual_attn, L,
        [&] { dev_.add(x_.get(), proj_.get(), static_cast<std::size_t>(T * h), t); });
    run(Op::rmsnorm_mlp, L,
        [&] { dev_.rmsnorm(x_.get(), b.gamma_mlp.get(), xn_.get(), T, h, eps, t); });
    run(Op::gate_up_proj, L,
        [&] { dev_.gemm(xn_.get(), b.w_gate_up.get(), gate_up_.get(), T, 2 * sh_.inter, h, t); });
    run(Op::swiglu, L, [&] { dev_.swiglu(gate_up_.get(), act_.get(), T, sh_.inter, t); });
    run(Op::down_proj, L,
        [&] { dev_.gemm(act_.get(), b.w_down.get(), proj_.get(), T, h, sh_.inter, t); });
    if (hooks) hooks->after_block(L, 1, step_index);
    run(Op::allreduce_mlp, L,
        [&] { coll.all_reduce(proj_.get(), static_cast<std::size_t>(T * h), t); });
    run(Op::residual_mlp, L,
        [&] { dev_.add(x_.get(), proj_.get(), static_cast<std::size_t>(T * h), t); });
  }
}

}  // namespace tpb
