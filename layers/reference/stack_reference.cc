// The fp64 host step of the layer stack, written from the semantics of the ops (layers/device.h)
// and of the TP layer (tp_model/tp_model.cc): x -> rmsnorm -> QKV -> rope -> KV write ->
// attention -> O -> +res -> rmsnorm -> gate/up -> swiglu -> down -> +res, per layer; unsharded,
// so no all-reduce. One projection's weights exist at a time, in a buffer every layer reuses.
#include "layers/reference/stack_reference.h"

#include <algorithm>
#include <initializer_list>

#include "base/errors.h"
#include "layers/reference/dtype_round.h"
#include "layers/reference/model_fill.h"
#include "layers/reference/parallel_rows.h"
#include "layers/reference/ref_ops.h"

namespace tpb::ref {

namespace {

using Dvec = std::vector<double>;

// Vocabulary rows of the LM head filled at a time.
constexpr int64_t kChunk = 8192;

// Buffers every layer reuses, sized once per step: a fresh allocation per projection would
// spend the 8B model's reference in page faults.
struct Workspace {
  Vec weights;  // the largest projection's (or LM head chunk's) weights
  Dvec kc, vc;  // one layer's KV cache, [batch * max_ctx, kv_heads * d]
};

// What every layer of one step shares: the shape, the phase's positions and the cache layout.
struct StepFrame {
  const TpModelConfig& cfg;
  int threads;
  int64_t tps;   // tokens per sequence this step
  int64_t pos0;  // position of each sequence's first new token
  int64_t rows;  // tokens = batch * tps
  AttnShape attn;
  Workspace* ws;
};

// One seeded full tensor for one layer (its rows [row0, row0 + rows)).
struct Block {
  Tensor tensor;
  float scale;
  int64_t cols, row0, rows;
};

// y = x W^T, W the listed blocks stacked by rows (QKV: q | k | v; gate_up: gate | up), filled
// into the workspace just before the GEMM.
Dvec project(const StepFrame& f, int64_t layer, const Dvec& x, std::initializer_list<Block> w) {
  Vec& weights = f.ws->weights;
  int64_t n = 0, k = 0;
  for (const Block& b : w) {
    TPB_ASSERT(static_cast<std::size_t>((n + b.rows) * b.cols) <= weights.size(),
               "reference workspace too small");
    fill_rows(weights.data() + n * b.cols, tensor_seed(f.cfg.seed, layer, b.tensor), b.scale,
              b.cols, b.row0, b.rows, f.cfg.dtype, f.threads);
    n += b.rows;
    k = b.cols;
  }
  Dvec y;
  gemm(x, weights, y, f.rows, n, k, f.threads);
  return y;
}

Vec gamma(const StepFrame& f, int64_t layer, Tensor t) {
  Vec g(static_cast<std::size_t>(f.cfg.shape.hidden));
  fill_rows(g.data(), tensor_seed(f.cfg.seed, layer, t), 1.0f, f.cfg.shape.hidden, 0, 1,
            f.cfg.dtype, f.threads);
  return g;
}

// The attention block: x += O(attention(rope(QKV(rmsnorm(x))))) over the layer's KV cache.
void attention_block(const StepFrame& f, int64_t l, Dvec& x) {
  const ModelShape& m = f.cfg.shape;
  const int64_t h = m.hidden, d = m.head_dim, kv_w = m.n_kv_heads * d;
  const float eps = static_cast<float>(m.rms_eps), sh = init_scale(h);
  Dvec xn;
  rmsnorm(x, gamma(f, l, Tensor::gamma_attn), xn, f.rows, h, eps, f.threads);
  Dvec qkv = project(f, l, xn,
                     {{Tensor::q, sh, h, 0, m.n_heads * d},
                      {Tensor::k, sh, h, 0, kv_w},
                      {Tensor::v, sh, h, 0, kv_w}});
  rope(qkv, f.rows, f.tps, f.pos0, f.attn, static_cast<float>(m.rope_theta), f.threads);
  // The cache is a full [batch * max_ctx, kv_heads * d] tensor. Decode reads the seeded
  // positions before `context`; prefill overwrites every position it reads.
  const int64_t cache_rows = f.attn.batch * f.attn.max_ctx;
  const bool decode = f.cfg.phase == Phase::decode;
  Dvec &kc = f.ws->kc, &vc = f.ws->vc;
  if (decode) {
    const DType t = f.cfg.dtype;
    fill_rows(kc.data(), tensor_seed(f.cfg.seed, l, Tensor::k_cache), 1.0f, kv_w, 0, cache_rows, t,
              f.threads);
    fill_rows(vc.data(), tensor_seed(f.cfg.seed, l, Tensor::v_cache), 1.0f, kv_w, 0, cache_rows, t,
              f.threads);
  }
  kv_write(qkv, kc, vc, f.tps, f.pos0, f.attn);
  Dvec out;
  if (decode)
    attention_decode(qkv, kc, vc, out, f.cfg.context + 1, f.attn, f.threads);
  else
    attention_prefill(qkv, kc, vc, out, f.cfg.prompt, f.attn, f.threads);
  add(x, project(f, l, out, {{Tensor::o, init_scale(m.n_heads * d), m.n_heads * d, 0, h}}));
}

// The MLP block: x += down(swiglu(gate_up(rmsnorm(x)))).
void mlp_block(const StepFrame& f, int64_t l, Dvec& x) {
  const ModelShape& m = f.cfg.shape;
  const int64_t h = m.hidden, inter = m.intermediate;
  const float sh = init_scale(h);
  Dvec xn;
  rmsnorm(x, gamma(f, l, Tensor::gamma_mlp), xn, f.rows, h, static_cast<float>(m.rms_eps),
          f.threads);
  const Dvec gu =
      project(f, l, xn, {{Tensor::gate, sh, h, 0, inter}, {Tensor::up, sh, h, 0, inter}});
  Dvec act;
  swiglu(gu, act, f.rows, inter, f.threads);
  add(x, project(f, l, act, {{Tensor::down, init_scale(inter), inter, 0, h}}));
}

// The step's end (tp_model_serve.cc): final RMSNorm of each sequence's last row, then every
// vocabulary row's logit, in chunks of rows so the [vocab, hidden] head is never whole.
Dvec lm_head_logits(const StepFrame& f, const Dvec& x) {
  const ModelShape& m = f.cfg.shape;
  const int64_t h = m.hidden, V = m.vocab, S = f.cfg.batch;
  if (V < 1) throw BadInput("model " + m.name + ": the LM head needs a vocabulary");
  Dvec last(static_cast<std::size_t>(S * h));
  for (int64_t s = 0; s < S; ++s)
    std::copy_n(x.begin() + (s * f.tps + f.tps - 1) * h, h, last.begin() + s * h);
  Dvec normed;
  rmsnorm(last, gamma(f, 0, Tensor::final_gamma), normed, S, h, static_cast<float>(m.rms_eps),
          f.threads);
  Dvec logits(static_cast<std::size_t>(S * V));
  const uint64_t seed = tensor_seed(f.cfg.seed, 0, Tensor::lm_head);
  for (int64_t c0 = 0; c0 < V; c0 += kChunk) {
    const int64_t n = std::min(kChunk, V - c0);
    fill_rows(f.ws->weights.data(), seed, init_scale(h), h, c0, n, f.cfg.dtype, f.threads);
    Dvec part;
    gemm(normed, f.ws->weights, part, S, n, h, f.threads);
    for (int64_t s = 0; s < S; ++s)
      std::copy_n(part.begin() + s * n, n, logits.begin() + s * V + c0);
  }
  return logits;
}

}  // namespace

StackResult reference_step(const TpModelConfig& cfg, int threads) {
  if (cfg.serve.max_tokens > 0) throw BadInput("--check: the host reference is of fixed steps");
  (void)unit_roundoff(cfg.dtype);  // throws BadInput for a dtype with no host rounding (fp8)
  const ModelShape& m = cfg.shape;
  const bool decode = cfg.phase == Phase::decode;
  const int64_t tps = decode ? 1 : cfg.prompt;
  const int64_t max_ctx = decode ? cfg.context + 1 : cfg.prompt;
  const int64_t h = m.hidden, d = m.head_dim, kv_w = m.n_kv_heads * d;
  Workspace ws;
  const int64_t qkv = (m.n_heads + 2 * m.n_kv_heads) * d * h, o = h * m.n_heads * d;
  const int64_t mlp = 2 * m.intermediate * h,
                head = cfg.lm_head ? std::min(kChunk, m.vocab) * h : 0;
  ws.weights.resize(static_cast<std::size_t>(std::max({qkv, o, mlp, head})));
  ws.kc.resize(static_cast<std::size_t>(cfg.batch * max_ctx * kv_w));
  ws.vc.resize(ws.kc.size());
  const StepFrame f{cfg,
                    host_threads(threads),
                    tps,
                    decode ? cfg.context : 0,
                    cfg.batch * tps,
                    AttnShape{cfg.batch, m.n_heads, m.n_kv_heads, d, max_ctx},
                    &ws};
  StackResult r;
  r.x.resize(static_cast<std::size_t>(f.rows * h));
  fill_rows(r.x.data(), tensor_seed(cfg.seed, 0, Tensor::input), 1.0f, h, 0, f.rows, cfg.dtype,
            f.threads);
  for (int64_t l = 0; l < cfg.layers; ++l) {
    attention_block(f, l, r.x);
    mlp_block(f, l, r.x);
  }
  if (cfg.lm_head) {
    r.logits = lm_head_logits(f, r.x);
    r.vocab = m.vocab;
  }
  return r;
}

}  // namespace tpb::ref
