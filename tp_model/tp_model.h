// A stack of tensor-parallel transformer layers on one Device: weights (this rank's shard),
// KV cache and activations, allocated once per point. The same class with tp=1 is the
// unsharded reference used by --check.
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/collective.h"
#include "layers/cost_model.h"
#include "layers/device.h"
#include "layers/model_shape.h"
#include "layers/step_batch.h"
#include "layers/timeline.h"
#include "layers/tp_model_config.h"

namespace tpb {

class AttnSide;  // tp_model.cc: the ops where a fixed step and a mixed step differ

// Hooks the step driver calls between ops; used by --inject (slowdown, jitter). Compute the
// extra work inside `after_block` so it is stamped as Op::injected compute.
class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // Called after each compute block (attention block, MLP block) before its all-reduce.
  virtual void after_block(int layer, int block, int step) = 0;
  // Called inside a compute op's stamp, before and after its work, so extra work done there
  // (--inject slow_op) is the op's own time. `carried`: the op a fused kernel runs with it
  // (layers/ops.h fused_into), else Op::count.
  virtual void op_begin(Op /*op*/, Op /*carried*/, int /*layer*/, int /*step*/) {}
  virtual void op_end(Op /*op*/, Op /*carried*/, int /*layer*/, int /*step*/) {}
};

// Runs body() as one stamped `op` (layers/timeline.h stamped) with the hooks' op_begin and
// op_end inside the stamp.
template <class F>
void hooked(Timeline* tl, StepHooks* hooks, Op op, int layer, int step, F&& body,
            Op carried = Op::count) {
  stamped(tl, op, layer, step, [&] {
    if (hooks) hooks->op_begin(op, carried, layer, step);
    body();
    if (hooks) hooks->op_end(op, carried, layer, step);
  });
}

class TpModel {
 public:
  TpModel(Device& dev, const TpModelConfig& cfg);

  // One step of all layers. Stamps every op into `tl` when given. Throws CollectiveTimeout
  // from the collective.
  // Fixed mode only (BadInput in serving mode).
  // With cfg.lm_head the step ends as step_mixed's does (ops final_norm .. sample, layer =
  // layers); the ids it sampled are then sampled_ids().
  void step(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks);

  // One mixed step (serving mode): the layers over b.tokens() rows, each sequence at its own
  // positions in the paged cache, then, with serve.lm_head, the final RMSNorm, the
  // vocab-parallel LM head and greedy sampling on the last row of each sequence that samples
  // (ops final_norm .. sample, stamped with layer = layers). Returns those sequences' next
  // token ids in seqs order, the same on every rank; empty without the LM head. The rows
  // start from set_input_seeded(step_index): there is no embedding table, so a token's row
  // is a seeded fill, not a lookup. Throws BadInput when b does not fit cfg.serve.
  std::vector<int32_t> step_mixed(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks,
                                  const StepBatch& b);

  // Rows [0, rows) of the residual stream from a seed that depends on the step index, so the
  // TP model and its reference see the same input at every step.
  void set_input_seeded(int step_index, int64_t rows);

  // Resets the residual stream to the seeded input and the KV cache to its seeded contents,
  // so a verification step starts from a known state on every rank.
  void reset_state();

  // The residual stream in fp32 on the host: [tokens, hidden] in fixed mode, the rows of the
  // last mixed step in serving mode.
  std::vector<float> output() const;

  int64_t tokens() const { return tokens_; }  // rows the activations hold
  // The next token of each sequence from the last fixed step with cfg.lm_head (else empty).
  const std::vector<int32_t>& sampled_ids() const { return fixed_ids_; }
  bool ends_with_lm_head() const { return serving() ? cfg_.serve.lm_head : cfg_.lm_head; }
  bool serving() const { return cfg_.serve.max_tokens > 0; }
  const ShardShape& shard() const { return sh_; }

 private:
  struct LayerBuffers {
    DeviceBuffer gamma_attn, w_qkv, w_o, gamma_mlp, w_gate_up, w_down, k_cache, v_cache;
  };
  // The serving step's end (tp_model_serve.cc): final gamma, this rank's LM-head rows, the
  // sampled rows normalised, their logits, and the candidates' gather buffer (fp32).
  struct SampleBuffers {
    DeviceBuffer gamma_final, w_lm, normed, logits, gather;
    std::vector<float> max_host, gather_host;  // host staging, sized once
    std::vector<int32_t> col_host;
  };
  void alloc_activations();
  void fill_layer(int64_t l);
  void fill_cache(int64_t l);
  uint64_t seed_of(int64_t layer, int tensor) const;
  // y[m, n] = x w^T for a layer's GEMM whose weights were filled at `fill_scale`: under fp8
  // weights an FP8 GEMM (the device quantises x per tensor; the weights' scale follows from the
  // fill, fill_hash.h), the plain GEMM otherwise.
  void matmul(const void* x, const DeviceBuffer& w, float fill_scale, void* y, int64_t m, int64_t n,
              int64_t k) const;
  // The 14 ops of every layer over T rows; `side` runs rope, kv_write and attention.
  void run_layers(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks, int64_t T,
                  const AttnSide& side);
  void alloc_sampling();  // tp_model_serve.cc
  void norm_sampled_rows(const StepBatch& b);
  std::vector<int32_t> sample(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks,
                              const StepBatch& b);

  Device& dev_;
  TpModelConfig cfg_;
  ShardShape sh_;
  AttnShape attn_;
  int64_t tokens_ = 0;
  int64_t max_ctx_ = 0;
  int64_t kv0_ = 0;         // first global KV head held by this rank
  int64_t cache_rows_ = 0;  // positions per layer's cache: batch * max_ctx, or blocks * block
  int64_t rows_ = 0;        // rows of the residual stream the last step wrote
  std::vector<LayerBuffers> layers_;
  DeviceBuffer x_, xn_, qkv_, attn_out_, proj_, gate_up_, act_;
  SampleBuffers smp_;
  StepBatch fixed_rows_;  // fixed mode with lm_head: the batch's sequences as a StepBatch
  std::vector<int32_t> fixed_ids_;
};

}  // namespace tpb
