// The model backend's pricing with a profile's achievable block (issue 32): NAME:datasheet is
// today's model exactly (every op at its own roofline, no fixed cost), and the default H200
// profile adds to it the kernels' fixed cost and the fractions, never taking anything away.
#include <gtest/gtest.h>

#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"

namespace tpb {
namespace {

RunSpec decode_8b(const std::string& hardware, int64_t batch) {
  const nlohmann::json cfg = {
      {"backend", "model"},      {"collective", "model"}, {"world", 1},           {"tp", 1},
      {"model", "llama-3.1-8b"}, {"dtype", "bf16"},       {"hardware", hardware}, {"batch", batch},
      {"context", 1024}};
  return resolve_run_spec(cfg, 1, TPB_SOURCE_DIR "/configs");
}

// One layer's compute seconds (the plan prices one layer; every layer is the same).
double layer_compute_s(const RunSpec& spec, double* roofline_s = nullptr) {
  const CostQuery q = spec.cost_query();
  const StepCost c = step_cost(q);
  const Peaks peaks = model_peaks(spec);
  const Fabric f = load_fabric(spec.topology, spec.config_dir);
  const StepOpPlan plan =
      step_op_plan(spec, c, q.phase, q.batch, peaks, f, {1, 1}, model_kernel_counts(spec, q));
  double s = 0;
  for (const PricedOp& p : plan.layer)
    if (!op_is_collective(p.op)) s += p.s;
  if (roofline_s) *roofline_s = ops_roofline_time_s(c, peaks.flops, peaks.bw) / c.layers;
  return s;
}

TEST(ModelAchievable, DatasheetIsEveryOpAtItsRoofline) {
  for (int64_t b : {1, 8, 64, 256}) {
    SCOPED_TRACE(b);
    double roofline = 0;
    const double s = layer_compute_s(decode_8b("h200-sxm:datasheet", b), &roofline);
    EXPECT_NEAR(s, roofline, 1e-12 * roofline);
  }
}

// B=1: 10 kernels + 1/32 of the last residual's, each at kernel_overhead.eager_s, on top of
// ops that are each at least their roofline.
TEST(ModelAchievable, H200ProfileAddsTheKernelsFixedCost) {
  const RunSpec spec = decode_8b("h200-sxm", 1);
  const double per_kernel = spec.hw.achievable.kernel.eager_s;
  ASSERT_GT(per_kernel, 0);
  double roofline = 0;
  const double s = layer_compute_s(spec, &roofline);
  EXPECT_GE(s, roofline + (10 + 1.0 / 32) * per_kernel - 1e-12);
}

}  // namespace
}  // namespace tpb
