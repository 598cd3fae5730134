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

namespace tpb {

class Timeline;

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
};

// Hooks the step driver calls between ops; used by --inject (slowdown, jitter). Compute the
// extra work inside `after_block` so it is stamped as Op::injected compute.
class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // Called after each compute block (attention block, MLP block) before its all-reduce.
  virtual void after_block(int layer, int block, int step) = 0;
};

class TpModel {
 public:
  TpModel(Device& dev, const TpModelConfig& cfg);

  // One step of all layers. Stamps every op into `tl` when given. Throws CollectiveTimeout
  // from the collective.
  void step(Collective& coll, Timeline* tl, int step_index, StepHooks* hooks);

  // Resets the residual stream to the seeded input and the KV cache to its seeded contents,
  // so a verification step starts from a known state on every rank.
  void reset_state();

  // The residual stream [tokens, hidden] in fp32 on the host.
  std::vector<float> output() const;

  int64_t tokens() const { return tokens_; }
  const ShardShape& shard() const { return sh_; }

 private:
  struct LayerBuffers {
    DeviceBuffer gamma_attn, w_qkv, w_o, gamma_mlp, w_gate_up, w_down, k_cache, v_cache;
  };
  void fill_layer(int64_t l);
  void fill_cache(int64_t l);
  uint64_t seed_of(int64_t layer, int tensor) const;

  Device& dev_;
  TpModelConfig cfg_;
  ShardShape sh_;
  AttnShape attn_;
  int64_t tokens_ = 0;
  int64_t max_ctx_ = 0;
  int64_t kv0_ = 0;  // first global KV head held by this rank
  std::vector<LayerBuffers> layers_;
  DeviceBuffer x_, xn_, qkv_, attn_out_, proj_, gate_up_, act_;
};

}  // namespace tpb
