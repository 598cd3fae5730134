// The efficiency table past its largest point (harness/drive/model/table_fraction.h): an op
// whose time is a fixed part plus its roofline time at some rate is priced exactly beyond the
// grid, where holding the largest point's fraction would scale the fixed part with the work;
// an op whose time did not grow between the points grows at the roofline's rate; inside the
// grid nothing changed. A table measured on the CUDA backend's kernels carries an op whose
// launches grow with its work (the native prefill attention, one per query tile) at a fixed
// time per launch.
#include <gtest/gtest.h>

#include <algorithm>

#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "layers/cost_model.h"
#include "layers/cuda/plan/launch_plan_query.h"
#include "layers/hardware.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";
constexpr double kPeakFlops = 1e13, kPeakBw = 1e12;

RunSpec spec_at(int64_t batch) {
  return resolve_run_spec({{"backend", "model"},
                           {"world", 1},
                           {"tp", 1},
                           {"model", "tiny"},
                           {"dtype", "bf16"},
                           {"context", 1024},
                           {"batch", batch}},
                          1, kConfigs);
}

// The attention's roofline time at decode batch `b` (the truth's own yardstick).
double roofline(int64_t b) {
  for (const OpCost& c : step_cost(spec_at(b).cost_query()).layer_ops)
    if (c.op == Op::attention)
      return std::max(c.flops / kPeakFlops, (c.bytes_read + c.bytes_written) / kPeakBw);
  return 0;
}

// A profile whose attention takes time(b) at decode batches 16 and 64, the table's grid.
template <class Time>
nlohmann::json profile(Time time) {
  nlohmann::json j = {{"name", "t"},
                      {"peak_flops", {{"bf16", kPeakFlops}}},
                      {"peak_bw", kPeakBw},
                      {"source", "test"}};
  j["efficiency"] = {{"source", "hand"}, {"context", 1024}, {"points", nlohmann::json::array()}};
  for (int64_t b : {16, 64})
    j["efficiency"]["points"].push_back({{"op", "attention"},
                                         {"phase", "decode"},
                                         {"tp", 1},
                                         {"tokens", b},
                                         {"fraction", roofline(b) / time(b)}});
  return j;
}

template <class Time>
double priced_attention(Time time, int64_t b) {
  RunSpec s = spec_at(b);
  s.hw = hardware_from_json(profile(time), "t");
  const Fabric f = load_fabric(s.topology, s.config_dir);
  const StepOpPlan plan =
      step_op_plan(s, step_cost(s.cost_query()), Phase::decode, b, model_peaks(s), f, {1, 1});
  for (const PricedOp& o : plan.layer)
    if (o.op == Op::attention) return o.s;
  return -1;
}

TEST(EfficiencyPastTheGrid, AnAffineOpIsPricedExactly) {
  // 20 us of fixed time, then the work at 40% of the roofline's rate.
  auto affine = [](int64_t b) { return 20e-6 + roofline(b) / 0.4; };
  for (int64_t b : {16, 64}) EXPECT_NEAR(priced_attention(affine, b), affine(b), 1e-12);
  for (int64_t b : {128, 256, 1024}) {
    EXPECT_NEAR(priced_attention(affine, b), affine(b), 1e-9 * affine(b)) << b;
    // Holding the fraction at 64 would have priced the fixed part b / 64 times over.
    const double held = roofline(b) * affine(64) / roofline(64);
    EXPECT_GT(held - affine(b), 0.5 * 20e-6 * (b / 64.0 - 1)) << b;
  }
}

TEST(EfficiencyPastTheGrid, AFlatOpGrowsAtTheRooflinesRate) {
  auto flat = [](int64_t) { return 1e-3; };  // no measurable growth between 16 and 64
  EXPECT_NEAR(priced_attention(flat, 256), 1e-3 + roofline(256) - roofline(64), 1e-12);
}

// Llama-3.1-8B's prefill of one `prompt`-token sequence.
RunSpec prefill_at(int64_t prompt) {
  return resolve_run_spec({{"backend", "model"},
                           {"world", 1},
                           {"tp", 1},
                           {"model", "llama-3.1-8b"},
                           {"dtype", "bf16"},
                           {"phase", "prefill"},
                           {"batch", 1},
                           {"prompt", prompt}},
                          1, kConfigs);
}

// One layer's prefill attention by the CUDA launch plan: its launches, and its kernels'
// roofline time, each at the slower of its FLOPs (masked too) and bytes (scores too).
std::pair<double, double> plan_attention(int64_t prompt) {
  CostQuery q = prefill_at(prompt).cost_query();
  q.layers = 1;
  q.lm_head = false;
  double launches = 0, roof = 0;
  for (const KernelLaunch& k : layer_launch_plan(layer_dims(q))) {
    if (k.op != Op::attention) continue;
    launches += static_cast<double>(k.launches);
    roof += std::max((k.flops + k.wasted_flops) / kPeakFlops,
                     (k.bytes_read + k.bytes_written + k.scratch_bytes) / kPeakBw);
  }
  return {launches, roof};
}

double prefill_roofline(int64_t prompt) {
  CostQuery q = prefill_at(prompt).cost_query();
  q.layers = 1;
  q.lm_head = false;
  for (const OpCost& c : step_cost(q).layer_ops)
    if (c.op == Op::attention)
      return std::max(c.flops / kPeakFlops, (c.bytes_read + c.bytes_written) / kPeakBw);
  return 0;
}

// The prefill attention priced from a table with points at S = 128 and 512 taking time(S),
// measured on `backend`'s kernels ("" unsaid).
template <class Time>
double priced_prefill_attention(Time time, int64_t prompt, const std::string& backend) {
  nlohmann::json j = {{"name", "t"},
                      {"peak_flops", {{"bf16", kPeakFlops}}},
                      {"peak_bw", kPeakBw},
                      {"source", "test"}};
  j["efficiency"] = {{"source", "hand"}, {"points", nlohmann::json::array()}};
  if (!backend.empty()) j["efficiency"]["backend"] = backend;
  for (int64_t p : {128, 512})
    j["efficiency"]["points"].push_back({{"op", "attention"},
                                         {"phase", "prefill"},
                                         {"tp", 1},
                                         {"tokens", p},
                                         {"fraction", prefill_roofline(p) / time(p)}});
  RunSpec s = prefill_at(prompt);
  s.hw = hardware_from_json(j, "t");
  const Fabric f = load_fabric(s.topology, s.config_dir);
  CostQuery q = s.cost_query();
  const StepOpPlan plan = step_op_plan(s, step_cost(q), Phase::prefill, prompt, model_peaks(s), f,
                                       {1, 1}, model_kernel_counts(s, q));
  for (const PricedOp& o : plan.layer)
    if (o.op == Op::attention) return o.s - o.fixed_s;  // the table's part alone
  return -1;
}

TEST(EfficiencyPastTheGrid, TheNativePrefillAttentionLaunchesOnceATileAndHeadGroup) {
  // Hand count, Llama-3.1-8B at TP 1: 32 query heads over 8 KV heads, 256-query tiles (a
  // tile's fp32 scores, 32 heads x 256 x S x 4 bytes, fit 256 MiB up to S = 8192). Per tile:
  // the QK^T and PV GEMMs once per 8-head batch (4 each), one softmax over all 32 heads.
  EXPECT_EQ(plan_attention(128).first, 1 * (4 + 4 + 1));
  EXPECT_EQ(plan_attention(512).first, 2 * (4 + 4 + 1));
  EXPECT_EQ(plan_attention(4096).first, 16 * (4 + 4 + 1));
}

TEST(EfficiencyPastTheGrid, ACudaTableKeepsAFixedTimePerLaunch) {
  // 4 us a launch, then the plan's work at half its roofline's rate.
  auto law = [](int64_t p) {
    const auto [launches, roof] = plan_attention(p);
    return 4e-6 * launches + 2 * roof;
  };
  for (int64_t p : {128, 512})
    EXPECT_NEAR(priced_prefill_attention(law, p, "cuda"), law(p), 1e-9 * law(p)) << p;
  for (int64_t p : {1024, 4096}) {
    const double priced = priced_prefill_attention(law, p, "cuda");
    EXPECT_NEAR(priced, law(p), 1e-9 * law(p)) << p;
    // The same points without the plan take the line of time against the cost model's
    // roofline, whose fixed part is one op's, not one per launch.
    EXPECT_GT(std::abs(priced_prefill_attention(law, p, "") / law(p) - 1), 0.05) << p;
  }
  // Another backend's table is the line's.
  EXPECT_DOUBLE_EQ(priced_prefill_attention(law, 4096, "cpu"),
                   priced_prefill_attention(law, 4096, ""));
}

}  // namespace
}  // namespace tpb
