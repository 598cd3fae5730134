// The model backend's pricing with a profile's achievable block (issue 32): NAME:datasheet is
// today's model exactly (every op at its own roofline, no fixed cost), and the default H200
// profile adds to it the kernels' fixed cost and the fractions, never taking anything away.
#include <fmt/format.h>
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

// The point's `modelled:` warning says how its compute was priced: with an achievable block,
// the fractions and the fixed cost per kernel (eager or graph); "no launch overhead" only for a
// profile that has none.
TEST(ModelAchievable, TheModelledWarningNamesWhatPricedTheCompute) {
  auto text = [](const std::string& hw, bool graph) {
    RunSpec s = decode_8b(hw, 1);
    s.cuda_graph = graph;
    return model_device_caps(s, load_fabric(s.topology, s.config_dir)).warnings.at(0);
  };
  const RunSpec h200 = decode_8b("h200-sxm", 1);
  const std::string eager = text("h200-sxm", false), graph = text("h200-sxm", true);
  EXPECT_NE(eager.find("achievable block"), std::string::npos) << eager;
  EXPECT_EQ(eager.find("no launch overhead"), std::string::npos) << eager;
  EXPECT_NE(
      eager.find(fmt::format("plus {:.4g} us per kernel", h200.hw.achievable.kernel.eager_s * 1e6)),
      std::string::npos)
      << eager;
  EXPECT_NE(eager.find("(eager;"), std::string::npos) << eager;
  EXPECT_NE(
      graph.find(fmt::format("plus {:.4g} us per kernel", h200.hw.achievable.kernel.graph_s * 1e6)),
      std::string::npos)
      << graph;
  const std::string sheet = text("h200-sxm:datasheet", false);
  EXPECT_NE(sheet.find("efficiency 1, no launch overhead"), std::string::npos) << sheet;
}

}  // namespace
}  // namespace tpb
