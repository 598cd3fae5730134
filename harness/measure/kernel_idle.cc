// Kernels per step come from layers/cuda/plan (the fused step CudaDevice runs without per-op
// stamps, as calibrate's op profile does: its records have no kv_write or residual_attn row).
#include "harness/measure/kernel_idle.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "harness/config/backend_traits.h"
#include "harness/measure/calibration_profile.h"
#include "layers/cost_model.h"
#include "layers/cuda/plan/launch_plan_query.h"

namespace tpb {
namespace {

struct Gap {
  double step_s = 0, ops_s = 0;
  int64_t kernels = 0;
  double per_kernel() const { return (step_s - ops_s) / static_cast<double>(kernels); }
};

CostQuery query_of(const OpProfilePointRecord& r, const ModelShape& shape, DType t) {
  CostQuery q;
  q.shape = shape;
  q.phase = r.phase == "prefill" ? Phase::prefill : Phase::decode;
  q.batch = r.batch;
  q.context = r.context;
  q.prompt = r.prompt;
  q.tp = static_cast<int>(r.tp);
  q.dtype = t;
  return q;
}

}  // namespace

KernelOverhead kernel_idle_from_record(const CalibrationRecord& cal, const ModelShape& shape,
                                       const std::string& where) {
  // The launch plan below is the CUDA backend's: a record from another device launched none.
  const BackendTraits* bt = find_backend_traits(cal.context.device.backend);
  if (!bt || !bt->launches_kernels || cal.op_profile.empty()) return {};
  const DType t = parse_dtype(cal.dtype.value_or("bf16"), where + ": dtype");
  std::vector<Gap> gaps;
  for (const OpProfilePointRecord* r : fastest_repeats(cal, where)) {
    Gap g{*r->step_p50_s, 0, 0};
    for (const OpTimeRecord& o : *r->ops) g.ops_s += o.time_s_per_step;
    g.kernels =
        plan_totals(step_launch_plan(query_of(*r, shape, t), kDefaultSmCount, true)).launches;
    if (g.kernels > 0 && g.step_s > g.ops_s) gaps.push_back(g);
  }
  if (gaps.empty()) return {};
  std::sort(gaps.begin(), gaps.end(),
            [](const Gap& a, const Gap& b) { return a.per_kernel() < b.per_kernel(); });
  const double median = gaps[gaps.size() / 2].per_kernel();
  const std::string source = fmt::format(
      "fitted by tpbench calibrate from the record's own op profile: (step p50 - sum of op "
      "times) / kernels per step (the CUDA launch plan, fused), median of {} grid points "
      "{:.2f} us (range {:.2f}-{:.2f} us); the steps ran eager, so graph_s is taken equal",
      gaps.size(), median * 1e6, gaps.front().per_kernel() * 1e6, gaps.back().per_kernel() * 1e6);
  return {median, median, source};
}

}  // namespace tpb
