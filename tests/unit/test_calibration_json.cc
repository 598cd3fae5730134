// calibrate's records and their files (harness/record/json/calibration_json.h): a record written
// holds exactly the keys results/SCHEMA.md documents for calibration.json, in that order; it
// reads back to itself; the H200 record the live calibrate wrote (tests/golden) reads and writes
// back byte for byte; and a field that is not as calibrate writes it is named by its path.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/errors.h"
#include "harness/record/json/calibration_json.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;
using Keys = std::vector<std::string>;

Keys keys(const oj& j) {
  Keys k;
  for (const auto& [key, v] : j.items()) k.push_back(key);
  return k;
}

std::string golden_text(const std::string& name) {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/" + name);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Two ranks, the CPU probe, an all-reduce curve with its fit, an ok and a failed grid point.
CalibrationRecord full_record() {
  CalibrationRecord r;
  r.context.date = "2026-12-05T00:00:00Z";
  r.context.world_size = 2;
  r.context.ranks.push_back({});
  r.context.ranks[0].host = "box";
  r.model = {"tiny", 2};
  r.dtype = "fp32";
  r.peaks.device_ops["fp32"] = {20.5, 100.25, 1 << 26, 1024};
  r.peaks.cpu_probe = CpuProbePeakRecord{21, 19, 101};
  r.gemm_shapes.push_back({"qkv_proj", 1, 1024, 1024, "fp32", 1e-4, 20, 40, 0.2, 0.5});
  r.all_reduce.collective = "mpi";
  r.all_reduce.ranks = 2;
  r.all_reduce.points = std::vector<AllReducePointRecord>{{8, 1e-6, 0.008, 0.008}};
  r.all_reduce.wrong = 0;
  r.all_reduce.alpha_s = 1e-6;
  r.all_reduce.algbw_GBps = 1;
  r.all_reduce.busbw_GBps = 1;
  r.all_reduce.fit = "t(S) = alpha + S / algbw";
  OpProfilePointRecord ok{0, "decode", 2, 4, 0, 1024, PointStatus::ok};
  ok.step_p50_s = 0.01;
  ok.step_mean_s = 0.011;
  ok.ops = std::vector<OpTimeRecord>{{"qkv_proj", 0.001, 0.0005, 0.5}};
  OpProfilePointRecord failed{0, "prefill", 2, 1, 512, 0, PointStatus::oom};
  failed.reason = "does not fit";
  r.op_profile = {ok, failed};
  HardwareProfileRecord hw;
  hw.name = "calibrated-box";
  hw.peak_flops = {{"fp32", 1e11}};
  hw.efficiency = oj{{"source", "s"}, {"context", 1024}, {"points", oj::array()}};
  r.hardware = hw;
  return r;
}

TEST(CalibrationJson, WritesTheDocumentedKeysInOrder) {
  const oj j = to_json(full_record());
  EXPECT_EQ(keys(j), (Keys{"schema", "schema_version", "context", "model", "dtype", "peaks",
                           "gemm_shapes", "all_reduce", "op_profile", "hardware"}));
  EXPECT_EQ(j["schema"], "tpbench.calibration");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(keys(j["model"]), (Keys{"name", "tp"}));
  EXPECT_EQ(keys(j["peaks"]), (Keys{"device_ops", "cpu_probe"}));
  EXPECT_EQ(keys(j["peaks"]["device_ops"]["fp32"]),
            (Keys{"add_GBps", "gemm_GFLOPs", "stream_bytes", "gemm_dim"}));
  EXPECT_EQ(keys(j["peaks"]["cpu_probe"]), (Keys{"read_GBps", "axpy_GBps", "sgemm_GFLOPs"}));
  EXPECT_EQ(keys(j["gemm_shapes"][0]), (Keys{"op", "m", "n", "k", "dtype", "time_s", "GFLOPs",
                                             "GBps", "of_peak_flops", "of_peak_bw"}));
  EXPECT_EQ(keys(j["all_reduce"]), (Keys{"collective", "ranks", "points", "wrong", "alpha_s",
                                         "algbw_GBps", "busbw_GBps", "fit"}));
  EXPECT_EQ(keys(j["all_reduce"]["points"][0]),
            (Keys{"bytes", "time_s", "algbw_GBps", "busbw_GBps"}));
  const Keys grid = {"repeat", "phase", "tp", "batch", "prompt", "context", "status"};
  Keys ok = grid, failed = grid;
  ok.insert(ok.end(), {"step_p50_s", "step_mean_s", "ops"});
  failed.push_back("reason");
  EXPECT_EQ(keys(j["op_profile"][0]), ok);
  EXPECT_EQ(keys(j["op_profile"][1]), failed);
  EXPECT_EQ(j["op_profile"][1]["status"], "oom");
  EXPECT_EQ(keys(j["op_profile"][0]["ops"][0]),
            (Keys{"op", "time_s_per_step", "roofline_s", "fraction"}));
  EXPECT_EQ(keys(j["hardware"]), (Keys{"name", "peak_flops", "peak_bw", "memory_bytes", "llc_bytes",
                                       "link_bw", "source", "measure_at_startup", "efficiency"}));
  // Units as written: a byte count an integer, a capacity a float (as the profile parser has it).
  EXPECT_TRUE(j["peaks"]["device_ops"]["fp32"]["stream_bytes"].is_number_integer());
  EXPECT_TRUE(j["hardware"]["memory_bytes"].is_number_float());
}

TEST(CalibrationJson, OneRankWritesAnEmptyCurveAndNoProfile) {
  CalibrationRecord r = full_record();
  r.all_reduce = {};
  r.op_profile.clear();
  r.peaks.cpu_probe.reset();
  const oj j = to_json(r);
  EXPECT_EQ(j["all_reduce"], oj::object());
  EXPECT_EQ(j["op_profile"], oj::array());
  EXPECT_EQ(keys(j["peaks"]), Keys{"device_ops"});
}

TEST(CalibrationJson, ARecordReadsBackToItself) {
  const oj j = to_json(full_record());
  EXPECT_EQ(to_json(calibration_from_json(j, "test")).dump(), j.dump());
}

TEST(CalibrationJson, TheLiveH200RecordWritesBackByteForByte) {
  const std::string text = golden_text("calibration_h200_2026-12-04.json");
  const CalibrationRecord r = calibration_from_json(oj::parse(text), "test");
  EXPECT_EQ(to_json(r).dump(2) + "\n", text);
}

TEST(CalibrationJson, TheTopologyIsAFabricPreset) {
  MeasuredTopologyRecord t{"measured-box", "d", {2, {"mpi", 2, {{8, 1e-6}, {32, 2e-6}}, "s"}}};
  const oj j = to_json(t);
  EXPECT_EQ(keys(j), (Keys{"name", "description", "model"}));
  EXPECT_EQ(keys(j["model"]), (Keys{"gpus_per_node", "measured"}));
  EXPECT_EQ(keys(j["model"]["measured"]), (Keys{"collective", "ranks", "all_reduce", "source"}));
  EXPECT_EQ(j["model"]["measured"]["all_reduce"], oj::parse("[[8, 1e-6], [32, 2e-6]]"));
  EXPECT_EQ(fabric_section_json(t), j["model"]);
}

std::string read_error(const oj& j) {
  try {
    (void)calibration_from_json(j, "--from 'f.json'");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "no throw";
}

TEST(CalibrationJson, AFieldNotAsWrittenIsNamedByItsPath) {
  const oj good = to_json(full_record());
  oj j = good;
  j["gemm_shapes"][0]["GFLOPs"] = "fast";
  EXPECT_EQ(read_error(j),
            "--from 'f.json': calibration field 'gemm_shapes[0].GFLOPs' is missing or not a "
            "number");
  j = good;
  j["op_profile"][1]["status"] = "late";
  EXPECT_EQ(read_error(j),
            "--from 'f.json': calibration field 'op_profile[1].status' is missing or not ok, oom, "
            "skipped or error");
  j = good;
  j["peaks"]["device_ops"]["fp32"].erase("add_GBps");
  EXPECT_EQ(read_error(j),
            "--from 'f.json': calibration field 'peaks.device_ops.fp32.add_GBps' is missing or "
            "not a number");
  j = good;
  j["context"]["device"].erase("llc_bytes");
  EXPECT_EQ(read_error(j),
            "--from 'f.json': calibration field 'context.device.llc_bytes' is missing or not a "
            "number");
  j = good;
  j["schema"] = "tpbench.results";
  EXPECT_EQ(read_error(j),
            "--from 'f.json': not a calibration.json (its schema is not tpbench.calibration)");
}

// A count must be a whole number in its type's range, and an op profile point a shape the launch
// plan can divide by: a batch of 0 (or 1e-300, once cut to 0) reached its divisions.
TEST(CalibrationJson, CountsAndShapesOutOfRangeAreNamed) {
  struct Case {
    int point;
    const char *key, *want;
    oj value;
  };
  const Case cases[] = {
      {0, "batch", "a whole number in range", 1e-300},
      {0, "tp", "a whole number in range", 9223372036854775808ULL},
      {0, "batch", "a batch of 1 or more", 0},
      {1, "context", "a length of 0 or more", -1},
      {0, "phase", "decode or prefill", "train"},
  };
  for (const Case& c : cases) {
    oj j = to_json(full_record());
    j["op_profile"][c.point][c.key] = c.value;
    EXPECT_EQ(read_error(j), fmt::format("--from 'f.json': calibration field 'op_profile[{}].{}' "
                                         "is missing or not {}",
                                         c.point, c.key, c.want));
  }
}

}  // namespace
}  // namespace tpb
