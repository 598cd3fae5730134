// Compute ops run at max(flops / peak flops, bytes / peak bandwidth) divided by the fraction of
// that roofline the profile's efficiency table gives the op at this phase, TP degree and token
// count (1 without a table: the fastest the profile allows; results say which); an
// all-reduce's wait is what the group's late arrival leaves, its transfer the fabric's time.
#include "harness/drive/model/virtual_ranks.h"

#include <algorithm>
#include <random>
#include <set>

#include "collectives/model/collective_model.h"
#include "harness/serve/serve_random.h"
#include "layers/base/errors.h"
#include "layers/cost_model.h"

namespace tpb {

namespace {

// One layer's ops in the real step's order, each with its modelled seconds.
struct LayerPlan {
  std::vector<std::pair<Op, double>> ops;
};

double roofline_s(const OpCost& c, const Peaks& p) {
  return std::max(c.flops / p.flops, (c.bytes_read + c.bytes_written) / p.bw);
}

double compute_s(const RunSpec& spec, const CostQuery& q, Op op, const Peaks& peaks) {
  const double f = spec.hw.efficiency.fraction(op_name(op), phase_name(q.phase), q.tp,
                                               q.batch * tokens_per_step(q));
  return roofline_s(op_cost(q, op), peaks) / f;
}

double comm_bytes(const StepCost& cost, Op op) {
  for (const CommOp& c : cost.comm)
    if (c.op == op) return c.bytes;
  return 0;
}

// The group's members and the nodes they span, checked to split evenly.
ModelGroup group_shape(const RunSpec& spec, int group) {
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

LayerPlan layer_plan(const RunSpec& spec, int64_t layers, const Peaks& peaks, const Fabric& f,
                     int group) {
  CostQuery q = spec.cost_query();
  q.layers = layers;
  const StepCost cost = step_cost(q);
  const ModelAlgo algo = parse_model_algo(spec.algo, "--algo");
  const ModelGroup g = group_shape(spec, group);
  LayerPlan plan;
  for (int i = 0; i < kOpsPerLayer; ++i) {
    const Op op = static_cast<Op>(i);
    const double s = op_is_collective(op)
                         ? model_collective(f, CollKind::all_reduce,
                                            static_cast<int64_t>(comm_bytes(cost, op)), g, algo)
                               .time_s
                         : compute_s(spec, q, op, peaks);
    plan.ops.emplace_back(op, s);
  }
  return plan;
}

// One TP group's ranks, stepped together: each keeps its own clock, and a collective ends for
// all of them at the last arrival plus the modelled transfer.
class GroupRun {
 public:
  GroupRun(const RunSpec& spec, const std::vector<int>& members, const LayerPlan& plan)
      : spec_(spec),
        members_(members),
        plan_(plan),
        t_(members.size(), 0.0),
        block_(members.size(), 0.0) {
    for (int r : members) {
      inj_.push_back(inject_for_rank(spec.inject, r));
      rng_.emplace_back(spec.seed * 1000003ULL + static_cast<uint64_t>(r));
      noise_.emplace_back(spec.noise_seed * 1000003ULL + static_cast<uint64_t>(r) +
                          0x9e3779b97f4a7c15ULL);  // apart from the jitter draws
    }
    traces_.resize(members.size());
  }

  std::vector<RankTrace> run(int64_t layers) {
    for (int s = 0; s < spec_.steps; ++s) step(s, layers);
    return std::move(traces_);
  }

 private:
  void seg(std::size_t m, Op op, int layer, int step, double dur, bool coll = false) {
    traces_[m].segs.push_back({t_[m], t_[m] + dur, step, static_cast<int16_t>(layer), op,
                               static_cast<uint8_t>(coll ? 1 : 0)});
    t_[m] += dur;
  }

  void step(int s, int64_t layers) {
    std::vector<double> start = t_;
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const InjectSpec& i = inj_[m];
      t_[m] += i.host_delay_us * 1e-6;  // host work: no segment, a host gap
      if (i.jitter_p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_[m]) < i.jitter_p)
        seg(m, Op::injected, 0, s, i.jitter_us * 1e-6);
    }
    for (int64_t L = 0; L < layers; ++L) layer(static_cast<int>(L), s);
    // The compute after the step's last all-reduce is slowed before the step ends, so a slowed
    // rank computes exactly F times its own work in every step.
    slow_down(static_cast<int>(layers) - 1, s);
    for (std::size_t m = 0; m < members_.size(); ++m)
      traces_[m].segs.push_back({start[m], t_[m], s, 0, Op::step, 0});
  }

  // A slowed rank's extra work for the compute since its last collective (as the real
  // injector's after_block), as one injected segment.
  void slow_down(int L, int s) {
    for (std::size_t m = 0; m < members_.size(); ++m) {
      if (inj_[m].slowdown != 1.0 && block_[m] > 0)
        seg(m, Op::injected, L, s, (inj_[m].slowdown - 1) * block_[m]);
      block_[m] = 0;
    }
  }

  // --model-noise: the segment's time x (1 + CV z), at least 5% of it.
  double noisy(std::size_t m, double dur) {
    if (spec_.noise_cv <= 0) return dur;
    return dur * std::max(0.05, 1.0 + spec_.noise_cv * draw_normal(noise_[m]));
  }

  void layer(int L, int s) {
    for (const auto& [op, dur] : plan_.ops) {
      if (!op_is_collective(op)) {
        for (std::size_t m = 0; m < members_.size(); ++m) {
          const double d = noisy(m, dur);
          seg(m, op, L, s, d);
          block_[m] += d;
        }
        continue;
      }
      slow_down(L, s);  // the extra work lands before the all-reduce, as on a real rank
      const double last = *std::max_element(t_.begin(), t_.end());
      for (std::size_t m = 0; m < members_.size(); ++m) seg(m, op, L, s, last + dur - t_[m], true);
    }
  }

  const RunSpec& spec_;
  const std::vector<int>& members_;
  const LayerPlan& plan_;
  std::vector<double> t_;
  std::vector<double> block_;  // compute since the rank's last collective (or step start)
  std::vector<InjectSpec> inj_;
  std::vector<std::mt19937_64> rng_;
  std::vector<std::mt19937_64> noise_;
  std::vector<RankTrace> traces_;
};

}  // namespace

VirtualPlace virtual_place(const RunSpec& spec, int rank) {
  const int groups = spec.world / spec.tp;
  const bool strided = spec.tp_groups == "strided";
  return {strided ? rank % groups : rank / spec.tp, strided ? rank / groups : rank % spec.tp,
          rank / spec.gpus_per_node};
}

std::vector<RankTrace> virtual_rank_traces(const RunSpec& spec, int64_t layers, const Peaks& peaks,
                                           const Fabric& fabric) {
  std::vector<RankTrace> out(static_cast<std::size_t>(spec.world));
  std::vector<std::vector<int>> members(static_cast<std::size_t>(spec.world / spec.tp));
  for (int r = 0; r < spec.world; ++r) members[virtual_place(spec, r).group].push_back(r);
  for (std::size_t g = 0; g < members.size(); ++g) {
    const LayerPlan plan = layer_plan(spec, layers, peaks, fabric, static_cast<int>(g));
    std::vector<RankTrace> traces = GroupRun(spec, members[g], plan).run(layers);
    for (std::size_t m = 0; m < members[g].size(); ++m) {
      const int r = members[g][m];
      RankTrace& t = out[static_cast<std::size_t>(r)];
      t = std::move(traces[m]);
      t.rank = r;
      t.group = static_cast<int>(g);
      t.group_rank = static_cast<int>(m);
    }
  }
  return out;
}

}  // namespace tpb
