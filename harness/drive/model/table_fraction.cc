#include "harness/drive/model/table_fraction.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/errors.h"
#include "harness/analysis/peaks.h"
#include "layers/cuda/plan/launch_plan_query.h"

namespace tpb {

namespace {

// One layer of a uniform step of `tokens` new tokens: decode at the efficiency table's context
// (where its points were measured), prefill as one sequence.
CostQuery layer_query(const RunSpec& spec, Phase phase, int64_t tokens) {
  CostQuery q = spec.cost_query();
  q.phase = phase;
  q.lm_head = false;
  q.layers = 1;
  q.batch = phase == Phase::decode ? tokens : 1;
  if (phase == Phase::prefill) q.prompt = tokens;
  if (phase == Phase::decode && spec.hw.efficiency.context > 0)
    q.context = spec.hw.efficiency.context;
  return q;
}

// The op's roofline time (s) in that layer, by the cost model.
double roofline_at(const RunSpec& spec, Op op, Phase phase, int64_t tokens, const Peaks& peaks) {
  for (const OpCost& c : step_cost(layer_query(spec, phase, tokens)).layer_ops)
    if (c.op == op)
      return std::max(c.flops / peaks.flops, (c.bytes_read + c.bytes_written) / peaks.bw);
  return 0;
}

// The op's kernels in that layer by the CUDA launch plan: its launches, and their roofline
// time (s), each kernel at the slower of its FLOPs (masked ones too) and its bytes
// (workspaces too). Nothing where the plan refuses the shape.
struct PlanWork {
  double launches = 0, roofline_s = 0;
};
std::optional<PlanWork> plan_work_at(const RunSpec& spec, Op op, Phase phase, int64_t tokens,
                                     const Peaks& peaks) {
  std::vector<KernelLaunch> plan;
  try {
    plan = layer_launch_plan(layer_dims(layer_query(spec, phase, tokens)));
  } catch (const BadInput&) {
    return std::nullopt;
  }
  PlanWork w;
  for (const KernelLaunch& k : plan) {
    if (k.op != op) continue;
    w.launches += static_cast<double>(k.launches);
    w.roofline_s += std::max((k.flops + k.wasted_flops) / peaks.flops,
                             (k.bytes_read + k.bytes_written + k.scratch_bytes) / peaks.bw);
  }
  if (w.launches == 0) return std::nullopt;
  return w;
}

// time = a x launches + b x plan roofline through the points at x1 and x2 (times t1, t2),
// evaluated at `tokens`; nothing where the fit has a negative fixed part or a margin faster
// than the plan's roofline (b < 1), or the plan does not cover the op.
std::optional<double> plan_time(const RunSpec& spec, Op op, Phase phase, int64_t x1, double t1,
                                int64_t x2, double t2, int64_t tokens, const Peaks& peaks) {
  const auto w1 = plan_work_at(spec, op, phase, x1, peaks);
  const auto w2 = plan_work_at(spec, op, phase, x2, peaks);
  const auto wx = plan_work_at(spec, op, phase, tokens, peaks);
  if (!w1 || !w2 || !wx) return std::nullopt;
  const double det = w1->launches * w2->roofline_s - w2->launches * w1->roofline_s;
  if (!(std::abs(det) > 0)) return std::nullopt;
  const double a = (t1 * w2->roofline_s - t2 * w1->roofline_s) / det;
  const double b = (w1->launches * t2 - w2->launches * t1) / det;
  if (!(a >= 0) || !(b >= 1)) return std::nullopt;
  return a * wx->launches + b * wx->roofline_s;
}

}  // namespace

double table_fraction(const RunSpec& spec, const char* name, Op op, Phase phase, int64_t tokens,
                      const Peaks& peaks) {
  const OpEfficiency& e = spec.hw.efficiency;
  const char* ph = phase_name(phase);
  const auto g = e.grid(name, ph, spec.tp);
  // A stand-in's points (the step's end priced as a layer op) are another op's line.
  if (g.size() < 2 || tokens <= g.back().first || std::string(name) != op_name(op))
    return e.fraction(name, ph, spec.tp, tokens);
  const auto [x1, f1] = g[g.size() - 2];
  const auto [x2, f2] = g.back();
  const double r1 = roofline_at(spec, op, phase, x1, peaks);
  const double r2 = roofline_at(spec, op, phase, x2, peaks);
  const double rx = roofline_at(spec, op, phase, tokens, peaks);
  if (!(r2 > r1) || !(rx > r2)) return f2;
  const double t1 = r1 / f1, t2 = r2 / f2;
  if (extends_by_launch_plan(spec))
    if (const auto t = plan_time(spec, op, phase, x1, t1, x2, t2, tokens, peaks))
      return std::min(1.0, rx / *t);
  const double slope = std::max((t2 - t1) / (r2 - r1), 1.0);
  return std::min(1.0, rx / (t2 + slope * (rx - r2)));
}

bool extends_by_launch_plan(const RunSpec& spec) {
  return spec.hw.efficiency.engine() == kLaunchPlanEngine;
}

}  // namespace tpb
