// What a stack of TP layers is built from: the model's shape, this rank's place in the TP
// group, the step's phase and sizes, the seed of its weights. Plain data below the model floor,
// so the host reference (layers/reference) describes the step TpModel runs (tp_model/) without
// including the floor above it.
#pragma once
#include <cstdint>

#include "base/dtype.h"
#include "layers/cost_model.h"
#include "layers/model_shape.h"
#include "layers/step_batch.h"

namespace tpb {

struct TpModelConfig {
  ModelShape shape;
  int64_t layers = 1;
  int tp = 1;
  int tp_rank = 0;
  DType dtype = DType::fp32;
  Phase phase = Phase::decode;
  int64_t batch = 1;
  int64_t context = 0;  // decode: cached positions; the new token goes to position `context`
  int64_t prompt = 1;   // prefill: tokens per sequence
  uint64_t seed = 1234;
  // Serving mode (tpbench serve) when serve.max_tokens > 0: steps go through step_mixed over
  // a paged KV cache, and phase, batch, context and prompt are unused. Last, so the
  // positional initialisers of the fixed mode stay valid.
  ServeShape serve;
  // Fixed mode: end every step with the final RMSNorm, the vocab-parallel LM head and greedy
  // sampling on the last row of each sequence (run --lm-head). Serving mode reads serve.lm_head.
  bool lm_head = false;

  // `dtype` is the GEMM weights'; everything else (activations, norms and their gammas, the KV
  // cache, the LM head, all-reduces) runs in this: bf16 under fp8 weights (FP8 GEMMs between
  // bf16 activations, as FP8 serving runs), `dtype` otherwise.
  DType act_dtype() const { return activation_dtype(dtype); }
};

// The fixed-mode model of the point that `q` prices: rank `tp_rank` of its TP group builds
// q.layers layers at q's shape, dtype, phase and sizes, with weights from `seed`.
inline TpModelConfig fixed_model_config(const CostQuery& q, int tp_rank, uint64_t seed) {
  TpModelConfig c;
  c.shape = q.shape;
  c.layers = q.layers;
  c.tp = q.tp;
  c.tp_rank = tp_rank;
  c.dtype = q.dtype;
  c.phase = q.phase;
  c.batch = q.batch;
  c.context = q.context;
  c.prompt = q.prompt;
  c.seed = seed;
  c.lm_head = q.lm_head;
  return c;
}

}  // namespace tpb
