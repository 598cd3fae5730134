// CostQuery -> LayerDims: the same TP split rules (shard_shape) the cost model uses.
#include "layers/cuda/plan/launch_plan_query.h"

namespace tpb {

LayerDims layer_dims(const CostQuery& q, int sm_count) {
  const ShardShape s = shard_shape(q.shape, q.tp);
  LayerDims d;
  d.prefill = q.phase == Phase::prefill;
  d.batch = q.batch;
  d.tokens_per_seq = tokens_per_step(q);
  // Decode: the new token is written to the cache first, then attends to the `context`
  // cached positions plus itself. Prefill: the prompt attends causally to itself.
  d.ctx_len = d.prefill ? q.prompt : q.context + 1;
  d.hidden = q.shape.hidden;
  d.q_heads = s.q_heads;
  d.kv_heads = s.kv_heads;
  d.head_dim = q.shape.head_dim;
  d.inter = s.inter;
  d.tp = q.tp;
  d.dtype = q.dtype;
  d.sm_count = sm_count;
  return d;
}

int64_t step_layers(const CostQuery& q) {
  return q.layers > 0 ? q.layers : q.shape.n_layers;
}

std::vector<KernelLaunch> step_launch_plan(const CostQuery& q, int sm_count) {
  const std::vector<KernelLaunch> layer = layer_launch_plan(layer_dims(q, sm_count));
  std::vector<KernelLaunch> step;
  const int64_t n = step_layers(q);
  step.reserve(layer.size() * static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) step.insert(step.end(), layer.begin(), layer.end());
  return step;
}

}  // namespace tpb
