// The efficiency table past its largest point (harness/drive/model/virtual_group.cc): an op
// whose time is a fixed part plus its roofline time at some rate is priced exactly beyond the
// grid, where holding the largest point's fraction would scale the fixed part with the work;
// an op whose time did not grow between the points grows at the roofline's rate; inside the
// grid nothing changed.
#include <gtest/gtest.h>

#include <algorithm>

#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "layers/cost_model.h"
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

}  // namespace
}  // namespace tpb
