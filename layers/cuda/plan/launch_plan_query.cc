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

std::vector<KernelLaunch> step_launch_plan(const CostQuery& q, int sm_count, bool fused) {
  LayerDims d = layer_dims(q, sm_count);
  d.fused = fused;
  const std::vector<KernelLaunch> layer = layer_launch_plan(d);
  std::vector<KernelLaunch> step;
  const int64_t n = step_layers(q);
  step.reserve(layer.size() * static_cast<std::size_t>(n) + 1);
  for (int64_t i = 0; i < n; ++i) step.insert(step.end(), layer.begin(), layer.end());
  if (fused) {  // TpModel: the last layer's MLP residual has no next norm to ride in
    step.push_back(plan_add(tokens_per_step(q) * q.batch * q.shape.hidden, q.dtype));
    step.back().op = Op::residual_mlp;
  }
  return step;
}

std::array<double, static_cast<std::size_t>(Op::count)> kernels_per_layer_op(const CostQuery& q,
                                                                             bool fused,
                                                                             int sm_count) {
  std::array<double, static_cast<std::size_t>(Op::count)> n{};
  const double layers = static_cast<double>(step_layers(q));
  for (const KernelLaunch& k : step_launch_plan(q, sm_count, fused))
    if (!op_is_collective(k.op)) n[static_cast<std::size_t>(k.op)] += 1.0 / layers;
  return n;
}

}  // namespace tpb
