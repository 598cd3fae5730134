// calibrate --from's builder against what the live calibrate wrote on an H200 (2026-12-04):
// tests/golden/calibration_h200_2026-12-04.json is the record that run wrote, and
// hardware_h200_calibrated_2026-12-04.json the hardware.json it wrote beside it, on the GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/errors.h"
#include "harness/measure/calibration_profile.h"
#include "harness/record/json/calibration_json.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

oj golden(const std::string& name) {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/" + name);
  return oj::parse(f);
}

CalibrationRecord golden_record() {
  return calibration_from_json(golden("calibration_h200_2026-12-04.json"), "test");
}

// Relative: the record keeps GFLOP/s and GB/s, so a peak comes back as x / 1e9 * 1e9.
void expect_near_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << what;
}

TEST(CalibrationProfile, RebuildsTheH200ProfileTheLiveCalibrateWrote) {
  const CalibrationRecord cal = golden_record();
  const oj want = golden("hardware_h200_calibrated_2026-12-04.json");
  const oj got = to_json(hardware_from_calibration(cal, "", "calibration.json", "test"));
  EXPECT_EQ(got["name"], want["name"]);  // calibrated-HOST, from the record's rank 0
  ASSERT_EQ(got["peak_flops"].size(), want["peak_flops"].size());
  for (const auto& [dt, v] : want["peak_flops"].items())
    expect_near_rel(got["peak_flops"][dt].get<double>(), v.get<double>(), "peak_flops." + dt);
  expect_near_rel(got["peak_bw"].get<double>(), want["peak_bw"].get<double>(), "peak_bw");
  for (const char* k : {"memory_bytes", "llc_bytes", "link_bw"})
    EXPECT_EQ(got[k].get<double>(), want[k].get<double>()) << k;
  EXPECT_EQ(got["measure_at_startup"], false);
  // The source differs on purpose: it says the profile was rebuilt, from which file, and then
  // quotes the live source word for word.
  const std::string live = want["source"].get<std::string>();
  EXPECT_EQ(got["source"].get<std::string>(),
            "rebuilt by tpbench calibrate --from calibration.json (nothing measured) from the "
            "record of: " +
                live);

  const oj& ge = got["efficiency"];
  const oj& we = want["efficiency"];
  EXPECT_EQ(ge["source"], we["source"]);
  EXPECT_EQ(ge["context"], we["context"]);
  // This record predates calibrate's `dtype`: the efficiency table states none, as then.
  EXPECT_FALSE(ge.contains("dtype"));
  ASSERT_EQ(ge["points"].size(), we["points"].size());
  for (std::size_t i = 0; i < we["points"].size(); ++i) {
    const oj &g = ge["points"][i], &w = we["points"][i];
    EXPECT_EQ(g["op"], w["op"]) << i;
    EXPECT_EQ(g["phase"], w["phase"]) << i;
    EXPECT_EQ(g["tp"], w["tp"]) << i;
    EXPECT_EQ(g["tokens"], w["tokens"]) << i;
    // Copied from the fastest repeat's record, not recomputed: exact.
    EXPECT_EQ(g["fraction"].get<double>(), w["fraction"].get<double>()) << i;
  }
  EXPECT_EQ(got.size(), want.size());  // no field added or lost
}

TEST(CalibrationProfile, PicksTheFastestRepeatOfEachGridPoint) {
  // qkv_proj decode TP 1 B 1 in the golden: repeat 0 has fraction 0.7455 at p50 6.054 ms; the
  // profile holds 0.7335, another repeat's, whose step was faster.
  const OpEfficiency e = efficiency_from_record(golden_record(), "test");
  EXPECT_NEAR(e.fraction("qkv_proj", "decode", 1, 1), 0.7335413757193422, 1e-15);
  EXPECT_EQ(e.context, 1024);
}

TEST(CalibrationProfile, AMissingFieldIsNamed) {
  oj cal = golden("calibration_h200_2026-12-04.json");
  cal["peaks"].erase("device_ops");
  try {
    (void)calibration_from_json(cal, "--from 'f.json'");
    FAIL() << "no throw";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()),
              "--from 'f.json': calibration field 'peaks.device_ops' is missing or not an object");
  }
}

}  // namespace
}  // namespace tpb
