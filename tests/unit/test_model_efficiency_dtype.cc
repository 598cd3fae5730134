// The efficiency table's dtype (calibrate's run dtype, layers/hardware.h): the model backend
// prices a point with the table only in that dtype and says so otherwise; a profile written
// before the label (the H200's of 2026-12-04, tests/golden) loads and applies as it did.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "layers/cost_model.h"
#include "layers/hardware.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

// One point: qkv_proj at decode, TP 1, one token, at fraction 0.5. `label` null: no dtype
// field (an older profile); "none": no efficiency table at all.
nlohmann::json profile(const nlohmann::json& label) {
  nlohmann::json j = {{"name", "t"},
                      {"peak_flops", {{"fp32", 1e12}, {"bf16", 1e13}}},
                      {"peak_bw", 1e12},
                      {"source", "test"}};
  if (label == "none") return j;
  const nlohmann::json pt = {
      {"op", "qkv_proj"}, {"phase", "decode"}, {"tp", 1}, {"tokens", 1}, {"fraction", 0.5}};
  j["efficiency"] = {{"source", "hand"}, {"context", 1024}, {"points", nlohmann::json::array()}};
  j["efficiency"]["points"].push_back(pt);
  if (!label.is_null()) j["efficiency"]["dtype"] = label;
  return j;
}

TEST(EfficiencyDtype, TheLabelRoundTripsAndIsChecked) {
  const Hardware h = hardware_from_json(profile("bf16"), "t");
  EXPECT_EQ(h.efficiency.dtype, "bf16");
  EXPECT_TRUE(h.efficiency.applies_to(DType::bf16));
  EXPECT_FALSE(h.efficiency.applies_to(DType::fp32));
  const Hardware back = hardware_from_json(nlohmann::json::parse(hardware_to_json(h).dump()), "t");
  EXPECT_EQ(back.efficiency.dtype, "bf16");
  const Hardware old = hardware_from_json(profile(nullptr), "t");
  EXPECT_EQ(old.efficiency.dtype, "");
  EXPECT_FALSE(hardware_to_json(old)["efficiency"].contains("dtype"));
  for (DType t : {DType::fp32, DType::bf16, DType::fp16, DType::fp8})
    EXPECT_TRUE(old.efficiency.applies_to(t));
  for (const nlohmann::json& bad : {nlohmann::json("tf32"), nlohmann::json(16)})
    EXPECT_EQ(
        bad_input([&] { hardware_from_json(profile(bad), "t"); }),
        "hardware 't': field 'efficiency.dtype' must be a dtype name (fp32, bf16, fp16, fp8)");
}

struct Priced {
  double qkv_s = -1;
  std::vector<std::string> warnings;
};

// tiny's qkv_proj at decode B = 1 on one virtual rank, through the profile above.
Priced price_qkv(DType t, const nlohmann::json& label) {
  RunSpec s = resolve_run_spec(
      {{"backend", "model"}, {"world", 1}, {"tp", 1}, {"model", "tiny"}, {"dtype", dtype_name(t)}},
      1, kConfigs);
  s.hw = hardware_from_json(profile(label), "t");
  const Fabric f = load_fabric(s.topology, s.config_dir);
  const StepOpPlan plan =
      step_op_plan(s, step_cost(s.cost_query()), Phase::decode, 1, model_peaks(s), f, {1, 1});
  Priced p;
  for (const PricedOp& o : plan.layer)
    if (o.op == Op::qkv_proj) p.qkv_s = o.s;
  p.warnings = model_device_caps(s, f).warnings;
  return p;
}

bool says_dtype(const Priced& p) {
  for (const std::string& w : p.warnings)
    if (w.rfind("efficiency_dtype: ", 0) == 0) return true;
  return false;
}

TEST(EfficiencyDtype, TheModelUsesTheTableInItsDtypeOnly) {
  const double roof_bf16 = price_qkv(DType::bf16, "none").qkv_s;
  const double roof_fp32 = price_qkv(DType::fp32, "none").qkv_s;
  ASSERT_GT(roof_bf16, 0);
  ASSERT_GT(roof_fp32, 0);
  const Priced same = price_qkv(DType::bf16, "bf16");
  EXPECT_DOUBLE_EQ(same.qkv_s, roof_bf16 / 0.5);
  EXPECT_FALSE(says_dtype(same));
  const Priced other = price_qkv(DType::fp32, "bf16");
  EXPECT_DOUBLE_EQ(other.qkv_s, roof_fp32);  // a bf16 fraction says nothing of fp32
  EXPECT_TRUE(says_dtype(other));
  const Priced unlabelled = price_qkv(DType::fp32, nullptr);  // as before the label
  EXPECT_DOUBLE_EQ(unlabelled.qkv_s, roof_fp32 / 0.5);
  EXPECT_FALSE(says_dtype(unlabelled));
}

TEST(EfficiencyDtype, TheH200ProfileOfDecember2026StillLoads) {
  const std::string path = TPB_SOURCE_DIR "/tests/golden/hardware_h200_calibrated_2026-12-04.json";
  const Hardware h = load_hardware(path, kConfigs);
  EXPECT_EQ(h.name, "calibrated-vm");
  EXPECT_DOUBLE_EQ(h.flops_for(DType::bf16), 801832218492775.5);
  EXPECT_EQ(h.efficiency.points.size(), 60u);
  EXPECT_EQ(h.efficiency.context, 1024);
  EXPECT_EQ(h.efficiency.dtype, "");
  EXPECT_TRUE(h.efficiency.applies_to(DType::bf16));
  EXPECT_DOUBLE_EQ(h.efficiency.fraction("qkv_proj", "decode", 1, 1), 0.7335413757193422);
  // A model run takes it as --hardware.
  const RunSpec s = resolve_run_spec(
      {{"backend", "model"}, {"world", 1}, {"model", "llama-3.1-8b"}, {"hardware", path}}, 1,
      kConfigs);
  EXPECT_EQ(s.hw.efficiency.points.size(), 60u);
}

}  // namespace
}  // namespace tpb
