// The full (unsharded) tensors that TpModel fills, rebuilt on the host from layers/fill_hash.h:
// the same seeds, scales and element indices, rounded to the storage dtype as a device's fill
// stores them. Written out again from TpModel's definition (tp_model.cc seed_of and its tensor
// ids, init_scale; tp_model_serve.cc's LM head) rather than shared with it, so that a slip in
// the model's seeds or shard offsets makes --check fail instead of agreeing with itself.
#pragma once
#include <cstdint>
#include <vector>

#include "base/dtype.h"

namespace tpb::ref {

// TpModel's tensor ids: per layer (seed layer = the layer), and the step's end (layer 0).
enum class Tensor : int {
  gamma_attn = 0,
  q = 1,
  k = 2,
  v = 3,
  o = 4,
  gamma_mlp = 5,
  gate = 6,
  up = 7,
  down = 8,
  k_cache = 9,
  v_cache = 10,
  input = 11,
  final_gamma = 32,
  lm_head = 33
};

// The fill seed of tensor `t` of layer `layer` for a model seeded with `model_seed`.
uint64_t tensor_seed(uint64_t model_seed, int64_t layer, Tensor t);

// The scale of a projection with `fan_in` inputs: uniform(-a, a), a = sqrt(3 / fan_in), in
// fp32 as TpModel computes it.
float init_scale(int64_t fan_in);

// Rows [row0, row0 + rows) of a full row-major tensor `cols` wide, every column, as the device
// holds them (rounded to `t`), written densely to dst. Rows are split over `threads`.
void fill_rows(float* dst, uint64_t seed, float scale, int64_t cols, int64_t row0, int64_t rows,
               DType t, int threads);
// The same, widened to double for the fp64 activations (the input rows, the KV cache).
void fill_rows(double* dst, uint64_t seed, float scale, int64_t cols, int64_t row0, int64_t rows,
               DType t, int threads);

}  // namespace tpb::ref
