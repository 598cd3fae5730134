// calibrate --from --runs: a recorded run's points join the efficiency table where the H200
// calibration's grid (decode 1..64 at context 1024, prefill 128 and 512) has no point, priced
// against the calibration's peaks by the grid's own rule, and are refused or left out, with a
// reason, where they cannot stand for the table.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/errors.h"
#include "harness/measure/calibration_profile.h"
#include "harness/measure/recorded_runs.h"
#include "harness/record/json/calibration_json.h"

namespace tpb {
namespace {

CalibrationRecord h200_record() {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/calibration_h200_2026-12-04.json");
  return calibration_from_json(nlohmann::ordered_json::parse(f), "test");
}

// One ok point of the record's device: an attention op of 2 GFLOP and 1 MB per step in 10 ms
// (median 10 ms over a mean of 12.5 ms, so the op's time is scaled by 0.8), and an all-reduce.
PointRecord point(const std::string& phase, int64_t batch, int64_t prompt, int64_t context) {
  PointRecord p;
  p.params.phase = phase;
  p.params.batch = batch;
  p.params.prompt = prompt;
  p.params.context = context;
  p.params.tp = 1;
  p.params.dtype = "bf16";
  p.params.model = "llama-3.1-70b";
  p.metrics.emplace();
  p.metrics->step_time_s.p50 = 0.010;
  p.metrics->step_time_s.mean = 0.0125;
  p.ops = std::vector<OpRecord>{{"attention", 0.010, 0.8, 1e6, 2e9},
                                {"allreduce_attn", 0.001, 0.1, std::nullopt, std::nullopt}};
  return p;
}

RecordedRun run_of(const CalibrationRecord& cal, std::vector<PointRecord> points) {
  RecordedRun r{"runs/a", {}};
  r.doc.context.emplace();
  r.doc.context->device = cal.context.device;
  for (PointRecord& p : points) r.doc.points.push_back({{}, std::move(p), std::nullopt});
  return r;
}

TEST(RecordedRuns, APrefillPastTheGridJoinsTheTablePricedByTheGridsRule) {
  const CalibrationRecord cal = h200_record();
  const RecordedOps got = recorded_op_points(cal, {run_of(cal, {point("prefill", 1, 4096, 0)})});
  ASSERT_EQ(got.taken.size(), 1u);
  EXPECT_TRUE(got.skipped.empty());
  const OpProfilePointRecord& g = got.taken[0].point;
  EXPECT_EQ(g.phase, "prefill");
  EXPECT_EQ(table_tokens(g), 4096);
  ASSERT_TRUE(g.ops);
  ASSERT_EQ(g.ops->size(), 1u);  // the all-reduce has no roofline of its own
  const CalibrationPeaks peaks = peaks_from_record(cal);
  const double roof = std::max(2e9 / peaks.flops.at("bf16"), 1e6 / peaks.bw);
  EXPECT_DOUBLE_EQ((*g.ops)[0].time_s_per_step, 0.010 * 0.8);
  EXPECT_DOUBLE_EQ((*g.ops)[0].fraction, roof / (0.010 * 0.8));
  EXPECT_EQ(got.taken[0].source, "runs/a points[0]: llama-3.1-70b prefill batch 1 prompt 4096");

  const OpEfficiency e = efficiency_from_record(cal, "test", got.taken);
  const auto grid = e.grid("attention", "prefill", 1);
  ASSERT_FALSE(grid.empty());
  EXPECT_EQ(grid.back().first, 4096);
  EXPECT_DOUBLE_EQ(grid.back().second, (*g.ops)[0].fraction);
  EXPECT_NE(e.source.find("prefill 128, 512;"), std::string::npos) << e.source;
  EXPECT_NE(e.source.find("calibrate --runs): runs/a points[0]"), std::string::npos) << e.source;
}

TEST(RecordedRuns, PointsThatCannotStandForTheTableAreLeftOutWithTheirReason) {
  const CalibrationRecord cal = h200_record();
  PointRecord oom = point("prefill", 1, 8192, 0);
  oom.status = PointStatus::oom;
  PointRecord int8 = point("prefill", 1, 2048, 0);
  int8.params.dtype = "int8";  // the record has fp32, bf16 and fp16 peaks
  PointRecord fp8 = point("prefill", 2, 2048, 0);
  fp8.params.weight_dtype = "fp8";
  const RecordedOps got = recorded_op_points(
      cal,
      {run_of(cal, {point("decode", 1, 0, 1024),  // the grid has decode B=1
                    point("decode", 8, 0, 4096),  // another context
                    point("prefill", 4, 128, 0),  // 512 tokens: the grid's prefill 512
                    point("serve", 4, 0, 0), oom, int8, fp8, point("prefill", 1, 2048, 0),  // taken
                    point("prefill", 2, 1024, 0)})});  // 2048 tokens: taken just before
  ASSERT_EQ(got.taken.size(), 1u);
  EXPECT_EQ(table_tokens(got.taken[0].point), 2048);
  ASSERT_EQ(got.skipped.size(), 8u);
  const char* want[] = {"the table has decode at TP 1 and 1 tokens",
                        "decode at context 4096: the table's decode fractions hold at context 1024",
                        "the table has prefill at TP 1 and 512 tokens",
                        "serve step: a mixed batch has no grid shape",
                        "status oom",
                        "no calibrated int8 peak",
                        "mixed dtypes: the table holds one",
                        "the table has prefill at TP 1 and 2048 tokens"};
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_NE(got.skipped[i].find(want[i]), std::string::npos) << got.skipped[i];
}

TEST(RecordedRuns, ARunOfAnotherDeviceIsRefusedByName) {
  const CalibrationRecord cal = h200_record();
  RecordedRun r = run_of(cal, {point("prefill", 1, 4096, 0)});
  r.doc.context->device.name = "NVIDIA H100 80GB HBM3";
  try {
    (void)recorded_op_points(cal, {r});
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("--runs 'runs/a': context.device"), std::string::npos)
        << e.what();
  }
  r.doc.context.reset();
  EXPECT_THROW((void)recorded_op_points(cal, {r}), BadInput);
}

}  // namespace
}  // namespace tpb
