// Every TP group of the world stepped through its own VirtualGroup, on the point's one batch.
#include "harness/drive/model/virtual_ranks.h"

#include <algorithm>
#include <set>

#include "base/errors.h"
#include "harness/drive/model/engine_pricing.h"
#include "harness/drive/model/virtual_group.h"
#include "layers/cost_model.h"

namespace tpb {

VirtualPlace virtual_place(const RunSpec& spec, int rank) {
  const int groups = spec.world / spec.tp;
  const bool strided = spec.tp_groups == "strided";
  return {strided ? rank % groups : rank / spec.tp, strided ? rank / groups : rank % spec.tp,
          rank / spec.gpus_per_node};
}

ModelGroup virtual_group_shape(const RunSpec& spec, int group) {
  std::set<int> nodes;
  for (int r = 0; r < spec.world; ++r) {
    const VirtualPlace p = virtual_place(spec, r);
    if (p.group == group) nodes.insert(p.node);
  }
  const int n = static_cast<int>(nodes.size());
  if (spec.tp % n != 0)
    throw BadInput("--tp-groups: a TP group of " + std::to_string(spec.tp) + " ranks spans " +
                   std::to_string(n) + " nodes unevenly");
  return {spec.tp, n};
}

std::vector<RankTrace> virtual_rank_traces(const RunSpec& spec, int64_t layers, const Peaks& peaks,
                                           const Fabric& fabric, OpPricingMap* pricing) {
  std::vector<RankTrace> out(static_cast<std::size_t>(spec.world));
  std::vector<std::vector<int>> members(static_cast<std::size_t>(spec.world / spec.tp));
  for (int r = 0; r < spec.world; ++r) members[virtual_place(spec, r).group].push_back(r);
  std::vector<HungRank> hung;
  for (std::size_t g = 0; g < members.size(); ++g) {
    CostQuery q = spec.cost_query();
    q.layers = layers;
    const StepOpPlan plan =
        step_op_plan(spec, step_cost(q), q.phase, q.batch * tokens_per_step(q), peaks, fabric,
                     virtual_group_shape(spec, static_cast<int>(g)), model_kernel_counts(spec, q));
    if (pricing) note_pricing(*pricing, plan);
    VirtualGroup run(spec, members[g]);
    for (int s = 0; s < spec.steps; ++s) run.step(s, layers, plan);
    const std::vector<HungRank> h = run.unnoticed_hangs();
    hung.insert(hung.end(), h.begin(), h.end());
    std::vector<RankTrace> traces = run.take_traces();
    for (std::size_t m = 0; m < members[g].size(); ++m) {
      const int r = members[g][m];
      RankTrace& t = out[static_cast<std::size_t>(r)];
      t = std::move(traces[m]);
      t.rank = r;
      t.group = static_cast<int>(g);
      t.group_rank = static_cast<int>(m);
    }
  }
  if (!hung.empty()) {
    std::vector<int> alive;
    for (int r = 0; r < spec.world; ++r)
      if (std::none_of(hung.begin(), hung.end(), [r](const HungRank& h) { return h.rank == r; }))
        alive.push_back(r);
    throw_world_hang(spec, alive, spec.steps - 1, hung);
  }
  return out;
}

}  // namespace tpb
