// The TP step (Megatron layout): x -> rmsnorm -> QKV(col) -> rope -> kv write -> attention
// -> O(row) -> all_reduce -> +res -> rmsnorm -> gate_up(col) -> swiglu -> down(row)
// -> all_reduce -> +res. Shards are cut from full tensors defined by fill_hash, so any tp
// produces the same mathematical layer. A fixed step (one phase, equal sequences) and a
// mixed step (tpbench serve) share the layer body; they differ in the attention side only.
#include "tp_model/tp_model.h"

#include <cmath>
#include <string>

#include "base/errors.h"
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

// How a step's rope, kv_write and attention run: the one place where a fixed step (every
// sequence at the same positions, a contiguous cache) and a mixed step (each sequence at its
// own, a paged cache) differ.
class AttnSide {
 public:
  virtual void rope(void* qkv) const = 0;
  virtual void kv_write(const void* qkv, void* k, void* v) const = 0;
  virtual void attention(const void* qkv, const void* k, const void* v, void* out) const = 0;
  // rope then kv_write, as one kernel where the backend fuses them.
  virtual void rope_kv_write(void* qkv, void* k, void* v) const {
    rope(qkv);
    kv_write(qkv, k, v);
  }

 protected:
  ~AttnSide() = default;
};

namespace {

// Every sequence decodes at position `context`, or prefills `prompt` tokens from 0.
class FixedAttn final : public AttnSide {
 public:
  FixedAttn(Device& dev, const TpModelConfig& c, const AttnShape& a)
      : dev_(dev), c_(c), a_(a), decode_(c.phase == Phase::decode) {}
  void rope(void* qkv) const override {
    dev_.rope(qkv, a_.batch * tps(), tps(), pos0(), a_, static_cast<float>(c_.shape.rope_theta),
              c_.act_dtype());
  }
  void kv_write(const void* qkv, void* k, void* v) const override {
    dev_.kv_write(qkv, k, v, tps(), pos0(), a_, c_.act_dtype());
  }
  void rope_kv_write(void* qkv, void* k, void* v) const override {
    dev_.rope_kv_write(qkv, k, v, a_.batch * tps(), tps(), pos0(), a_,
                       static_cast<float>(c_.shape.rope_theta), c_.act_dtype());
  }
  void attention(const void* qkv, const void* k, const void* v, void* out) const override {
    if (decode_)
      dev_.attention_decode(qkv, k, v, out, c_.context + 1, a_, c_.act_dtype());
    else
      dev_.attention_prefill(qkv, k, v, out, c_.prompt, a_, c_.act_dtype());
  }

 private:
  int64_t tps() const { return decode_ ? 1 : c_.prompt; }
  int64_t pos0() const { return decode_ ? c_.context : 0; }
  Device& dev_;
  const TpModelConfig& c_;
  const AttnShape& a_;
  bool decode_;
};

// Each sequence of the batch at its own positions, through its block table.
class VarlenAttn final : public AttnSide {
 public:
  VarlenAttn(Device& dev, const TpModelConfig& c, const AttnShape& a, const StepBatch& b)
      : dev_(dev), c_(c), a_(a), b_(b) {}
  void rope(void* qkv) const override {
    dev_.rope_varlen(qkv, b_, a_, static_cast<float>(c_.shape.rope_theta), c_.act_dtype());
  }
  void kv_write(const void* qkv, void* k, void* v) const override {
    dev_.kv_write_varlen(qkv, k, v, b_, c_.serve.kv, a_, c_.act_dtype());
  }
  void attention(const void* qkv, const void* k, const void* v, void* out) const override {
    dev_.attention_varlen(qkv, k, v, out, b_, c_.serve.kv, a_, c_.act_dtype());
  }

 private:
  Device& dev_;
  const TpModelConfig& c_;
  const AttnShape& a_;
  const StepBatch& b_;
};

void check_serve_shape(const ServeShape& s) {
  auto need = [](int64_t v, const char* field) {
    if (v < 1)
      throw BadInput(std::string(field) + ": must be >= 1 (got " + std::to_string(v) + ")");
  };
  need(s.max_seqs, "serve.max_seqs");
  need(s.kv.num_blocks, "serve.kv.num_blocks");
  need(s.kv.block_tokens, "serve.kv.block_tokens");
}

}  // namespace

TpModel::TpModel(Device& dev, const TpModelConfig& cfg)
    : dev_(dev), cfg_(cfg), sh_(shard_shape(cfg.shape, cfg.tp)) {
  const ModelShape& m = cfg_.shape;
  kv0_ = first_kv_head(m, cfg_.tp, cfg_.tp_rank);
  if (serving()) {
    check_serve_shape(cfg_.serve);
    tokens_ = cfg_.serve.max_tokens;
    cache_rows_ = cfg_.serve.kv.num_blocks * cfg_.serve.kv.block_tokens;
    attn_ = AttnShape{cfg_.serve.max_seqs, sh_.q_heads, sh_.kv_heads, m.head_dim, 0};
  } else {
    tokens_ = cfg_.batch * (cfg_.phase == Phase::decode ? 1 : cfg_.prompt);
    max_ctx_ = cfg_.phase == Phase::decode ? cfg_.context + 1 : cfg_.prompt;
    cache_rows_ = cfg_.batch * max_ctx_;
    attn_ = AttnShape{cfg_.batch, sh_.q_heads, sh_.kv_heads, m.head_dim, max_ctx_};
  }
  rows_ = tokens_;
  const std::size_t e = dtype_bytes(cfg_.act_dtype()), ew = dtype_bytes(cfg_.dtype);
  const int64_t h = m.hidden, d = m.head_dim, qkv_w = (sh_.q_heads + 2 * sh_.kv_heads) * d;
  const int64_t kv_elems = cache_rows_ * sh_.kv_heads * d;
  layers_.resize(cfg_.layers);
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    LayerBuffers& b = layers_[l];
    b.gamma_attn = dev_.alloc(h * e);
    b.w_qkv = dev_.alloc(qkv_w * h * ew);
    b.w_o = dev_.alloc(h * sh_.q_heads * d * ew);
    b.gamma_mlp = dev_.alloc(h * e);
    b.w_gate_up = dev_.alloc(2 * sh_.inter * h * ew);
    b.w_down = dev_.alloc(h * sh_.inter * ew);
    b.k_cache = dev_.alloc(kv_elems * e);
    b.v_cache = dev_.alloc(kv_elems * e);
    fill_layer(l);
  }
  alloc_activations();
  if (ends_with_lm_head()) alloc_sampling();
  if (!serving() && cfg_.lm_head) {
    // Sequence after sequence, as the fixed step's rows are; only the last row of each samples.
    const bool decode = cfg_.phase == Phase::decode;
    for (int64_t i = 0; i < cfg_.batch; ++i)
      fixed_rows_.seqs.push_back(
          SeqSlice{decode ? cfg_.context : 0, decode ? 1 : cfg_.prompt, true, {}});
  }
  reset_state();
}

void TpModel::alloc_activations() {
  const std::size_t e = dtype_bytes(cfg_.act_dtype());
  const int64_t h = cfg_.shape.hidden, d = cfg_.shape.head_dim;
  const int64_t qkv_w = (sh_.q_heads + 2 * sh_.kv_heads) * d;
  x_ = dev_.alloc(tokens_ * h * e);
  xn_ = dev_.alloc(tokens_ * h * e);
  qkv_ = dev_.alloc(tokens_ * qkv_w * e);
  attn_out_ = dev_.alloc(tokens_ * sh_.q_heads * d * e);
  proj_ = dev_.alloc(tokens_ * h * e);
  gate_up_ = dev_.alloc(tokens_ * 2 * sh_.inter * e);
  act_ = dev_.alloc(tokens_ * sh_.inter * e);
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
  // The GEMM weights in --dtype's; the gammas, as FP8 checkpoints keep them, in the activations'.
  DType t = cfg_.act_dtype();
  auto fill = [&](DeviceBuffer& buf, int tensor, float scale, int64_t full_cols, int64_t row0,
                  int64_t rows, int64_t col0, int64_t cols, int64_t dst_ld, int64_t dst_off) {
    dev_.fill(
        buf.get(), t,
        FillSpec{seed_of(l, tensor), scale, full_cols, row0, rows, col0, cols, dst_ld, dst_off});
  };
  fill(b.gamma_attn, kGammaAttn, 1.0f, h, 0, 1, 0, h, h, 0);
  fill(b.gamma_mlp, kGammaMlp, 1.0f, h, 0, 1, 0, h, h, 0);
  t = cfg_.dtype;
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
  // The cache is a full [cache_rows, n_kv_heads*d] tensor (a paged cache's rows are its
  // blocks' positions); this rank holds its KV heads.
  const int64_t d = cfg_.shape.head_dim, full = cfg_.shape.n_kv_heads * d;
  const int64_t rows = cache_rows_, w = sh_.kv_heads * d;
  dev_.fill(layers_[l].k_cache.get(), cfg_.act_dtype(),
            FillSpec{seed_of(l, kKCache), 1.0f, full, 0, rows, kv0_ * d, w, w, 0});
  dev_.fill(layers_[l].v_cache.get(), cfg_.act_dtype(),
            FillSpec{seed_of(l, kVCache), 1.0f, full, 0, rows, kv0_ * d, w, w, 0});
}

void TpModel::reset_state() {
  const int64_t h = cfg_.shape.hidden;
  dev_.fill(x_.get(), cfg_.act_dtype(), whole_tensor_fill(seed_of(0, kInput), 1.0f, tokens_, h));
  for (int64_t l = 0; l < cfg_.layers; ++l) fill_cache(l);
  rows_ = tokens_;
  dev_.synchronize();
}

void TpModel::set_input_seeded(int step_index, int64_t rows) {
  const uint64_t seed = mix64(seed_of(0, kInput) ^ static_cast<uint64_t>(step_index));
  dev_.fill(x_.get(), cfg_.act_dtype(), whole_tensor_fill(seed, 1.0f, rows, cfg_.shape.hidden));
}

std::vector<float> TpModel::output() const {
  std::vector<float> out(static_cast<std::size_t>(rows_ * cfg_.shape.hidden));
  dev_.synchronize();
  dev_.download(out.data(), x_.get(), out.size(), cfg_.act_dtype());
  return out;
}

void TpModel::step(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks) {
  if (serving()) throw BadInput("step: the model is in serving mode; use step_mixed");
  run_layers(coll, tl, step_index, hooks, tokens_, FixedAttn(dev_, cfg_, attn_));
  rows_ = tokens_;
  if (cfg_.lm_head) fixed_ids_ = sample(coll, tl, step_index, hooks, fixed_rows_);
  if (tl) tl->end_run();
}

std::vector<int32_t> TpModel::step_mixed(Collective& coll, Timeline* tl, int step_index,
                                         StepHooks* hooks, const StepBatch& b) {
  check_step_batch(b, cfg_.serve);
  const int64_t T = b.tokens();
  set_input_seeded(step_index, T);
  AttnShape a = attn_;
  a.batch = static_cast<int64_t>(b.seqs.size());
  run_layers(coll, tl, step_index, hooks, T, VarlenAttn(dev_, cfg_, a, b));
  rows_ = T;
  std::vector<int32_t> ids;
  if (cfg_.serve.lm_head) ids = sample(coll, tl, step_index, hooks, b);
  if (tl) tl->end_run();
  return ids;
}

void TpModel::matmul(const void* x, const DeviceBuffer& w, float fill_scale, void* y, int64_t m,
                     int64_t n, int64_t k) const {
  if (cfg_.dtype == DType::fp8)
    dev_.gemm_fp8(x, w.get(), fp8_fill_scale(fill_scale), y, m, n, k, cfg_.act_dtype());
  else
    dev_.gemm(x, w.get(), y, m, n, k, cfg_.dtype);
}

void TpModel::run_layers(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks,
                         int64_t T, const AttnSide& side) {
  const ModelShape& m = cfg_.shape;
  const DType t = cfg_.act_dtype();
  const int64_t h = m.hidden, d = m.head_dim;
  const int64_t qkv_w = (sh_.q_heads + 2 * sh_.kv_heads) * d;
  const float eps = static_cast<float>(m.rms_eps);
  const std::size_t act = static_cast<std::size_t>(T * h);
  // One kernel for residual add + RMSNorm and for rope + KV write, where the backend has them
  // and no per-op stamp falls between the two: each pair's time is then its second op's (the
  // first's own segment is absent), and a layer's last residual add runs inside the next
  // layer's rmsnorm_attn.
  const bool fuse = dev_.caps().fused_elementwise && (!tl || tl->level() != StampLevel::ops);
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    LayerBuffers& b = layers_[l];
    const int L = static_cast<int>(l);
    auto run = [&](Op op, auto&& body, Op carried = Op::count) {
      hooked(tl, hooks, op, L, step_index, body, carried);
    };
    if (fuse && l > 0)
      run(
          Op::rmsnorm_attn,
          [&] {
            dev_.add_rmsnorm(x_.get(), proj_.get(), b.gamma_attn.get(), xn_.get(), T, h, eps, t);
          },
          Op::residual_mlp);
    else
      run(Op::rmsnorm_attn,
          [&] { dev_.rmsnorm(x_.get(), b.gamma_attn.get(), xn_.get(), T, h, eps, t); });
    run(Op::qkv_proj, [&] { matmul(xn_.get(), b.w_qkv, init_scale(h), qkv_.get(), T, qkv_w, h); });
    if (fuse) {
      run(
          Op::rope, [&] { side.rope_kv_write(qkv_.get(), b.k_cache.get(), b.v_cache.get()); },
          Op::kv_write);
    } else {
      run(Op::rope, [&] { side.rope(qkv_.get()); });
      run(Op::kv_write, [&] { side.kv_write(qkv_.get(), b.k_cache.get(), b.v_cache.get()); });
    }
    run(Op::attention,
        [&] { side.attention(qkv_.get(), b.k_cache.get(), b.v_cache.get(), attn_out_.get()); });
    run(Op::o_proj, [&] {
      matmul(attn_out_.get(), b.w_o, init_scale(m.n_heads * d), proj_.get(), T, h, sh_.q_heads * d);
    });
    if (hooks) hooks->after_block(L, 0, step_index);
    run(Op::allreduce_attn, [&] { coll.all_reduce(proj_.get(), act, t); });
    if (fuse) {
      run(
          Op::rmsnorm_mlp,
          [&] {
            dev_.add_rmsnorm(x_.get(), proj_.get(), b.gamma_mlp.get(), xn_.get(), T, h, eps, t);
          },
          Op::residual_attn);
    } else {
      run(Op::residual_attn, [&] { dev_.add(x_.get(), proj_.get(), act, t); });
      run(Op::rmsnorm_mlp,
          [&] { dev_.rmsnorm(x_.get(), b.gamma_mlp.get(), xn_.get(), T, h, eps, t); });
    }
    run(Op::gate_up_proj, [&] {
      matmul(xn_.get(), b.w_gate_up, init_scale(h), gate_up_.get(), T, 2 * sh_.inter, h);
    });
    run(Op::swiglu, [&] { dev_.swiglu(gate_up_.get(), act_.get(), T, sh_.inter, t); });
    run(Op::down_proj, [&] {
      matmul(act_.get(), b.w_down, init_scale(m.intermediate), proj_.get(), T, h, sh_.inter);
    });
    if (hooks) hooks->after_block(L, 1, step_index);
    run(Op::allreduce_mlp, [&] { coll.all_reduce(proj_.get(), act, t); });
    if (!fuse || l + 1 == cfg_.layers)
      run(Op::residual_mlp, [&] { dev_.add(x_.get(), proj_.get(), act, t); });
  }
}

}  // namespace tpb
