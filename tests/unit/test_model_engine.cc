// --engine on virtual ranks (layers/profile/engine.h, harness/drive/model/virtual_group.cc): the
// built-in engine issues for free and changes nothing; a launch-bound engine makes a small step
// as long as its issue time, and a large step stays the device's; a profile names its source.
#include <gtest/gtest.h>

#include "base/errors.h"
#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "layers/profile/engine.h"
#include "tests/support/engine_file.h"

namespace tpb {
namespace {

RunSpec one_rank(int64_t batch, const std::string& engine) {
  return resolve_run_spec({{"backend", "model"},
                           {"collective", "model"},
                           {"world", 1},
                           {"model", "tiny"},
                           {"dtype", "bf16"},
                           {"hardware", "h100-sxm"},
                           {"batch", batch},
                           {"context", 512},
                           {"engine", engine}},
                          1, TPB_SOURCE_DIR "/configs");
}

struct Stepped {
  double step_s = 0, kernels = 0;
};

// Two steps of `layers` layers of the spec's decode step on one virtual rank: the second step's
// length and the kernels one step issues.
Stepped two_steps(const RunSpec& spec, int64_t layers) {
  const Fabric f = load_fabric(spec.topology, spec.config_dir);
  const CostQuery q = spec.cost_query();
  const StepOpPlan plan = step_op_plan(spec, step_cost(q), q.phase, q.batch, model_peaks(spec), f,
                                       {1, 1}, model_kernel_counts(spec, q));
  const std::vector<int> members{0};
  VirtualGroup g(spec, members);
  g.step(0, layers, plan);
  g.step(1, layers, plan);
  Stepped r;
  const std::vector<RankTrace> traces = g.take_traces();
  for (const SegmentRecord& s : traces[0].segs)
    if (s.op == Op::step && s.step == 1) r.step_s = s.t1 - s.t0;
  for (const PricedOp& p : plan.layer) r.kernels += p.kernels * static_cast<double>(layers);
  for (const PricedOp& p : plan.tail) r.kernels += p.kernels;
  return r;
}

nlohmann::json engine_json(double per_kernel_s) {
  return {{"host_per_kernel_s", per_kernel_s}, {"source", "a test"}};
}

TEST(ModelEngine, TheBuiltInEngineChangesNothing) {
  const EngineProfile none = load_engine("none", TPB_SOURCE_DIR "/configs");
  EXPECT_FALSE(none.host_bound());
  EXPECT_FALSE(none.source.empty());
  // A launch cost far below every op's own time never holds the device back.
  const std::string tiny = write_engine("tpb-engine-tiny", engine_json(1e-12));
  EXPECT_NEAR(two_steps(one_rank(8, tiny), 4).step_s, two_steps(one_rank(8, "none"), 4).step_s,
              1e-9);
}

// 10 ms a launch is far beyond any op of tiny: every op waits for its issue, so the step is
// the issue time of its kernels, plus at most the last op's own time.
TEST(ModelEngine, ALaunchBoundStepLastsItsIssueTime) {
  const std::string slow = write_engine("tpb-engine-slow", engine_json(0.01));
  const Stepped bound = two_steps(one_rank(8, slow), 4);
  const Stepped own = two_steps(one_rank(8, "none"), 4);
  ASSERT_GT(bound.kernels, 4 * 4);  // several kernels an op per layer, from the launch plan
  EXPECT_GE(bound.step_s, 0.01 * bound.kernels - 1e-9);
  EXPECT_LE(bound.step_s, 0.01 * bound.kernels + own.step_s);
}

// An engine whose issue keeps ahead of a long device step adds nothing to it.
TEST(ModelEngine, ADeviceBoundStepIsTheDevicesOwn) {
  const Stepped own = two_steps(one_rank(256, "none"), 4);
  const double per_kernel = 0.2 * own.step_s / own.kernels;  // issue takes a fifth of the step
  const std::string fast = write_engine("tpb-engine-fast", engine_json(per_kernel));
  const Stepped issued = two_steps(one_rank(256, fast), 4);
  EXPECT_GE(issued.step_s, own.step_s - 1e-12);
  // The first op waits for its own issue; after that the host is ahead.
  EXPECT_LE(issued.step_s, own.step_s + per_kernel * 8);
}

// An engine that does not wait for each step's tokens issues the next step while the device
// still runs this one: past the first step, a device-bound step is exactly the device's.
TEST(ModelEngine, AnEngineThatDoesNotSyncRunsAhead) {
  const Stepped own = two_steps(one_rank(256, "none"), 4);
  const double per_kernel = 0.2 * own.step_s / own.kernels;
  nlohmann::json j = engine_json(per_kernel);
  j["syncs_per_step"] = false;
  const Stepped ahead = two_steps(one_rank(256, write_engine("tpb-engine-async", j)), 4);
  EXPECT_NEAR(ahead.step_s, own.step_s, 1e-12);
}

TEST(ModelEngine, TheShippedEngineSaysWhatItIsFittedTo) {
  const EngineProfile e = load_engine("eager-python", TPB_SOURCE_DIR "/configs");
  EXPECT_EQ(e.name, "eager-python");
  EXPECT_TRUE(e.host_bound());
  EXPECT_NE(e.source.find("fitted"), std::string::npos);
  EXPECT_NE(e.source.find("Held out"), std::string::npos);
}

TEST(ModelEngine, BadEnginesAreRefusedByField) {
  auto refused = [](const nlohmann::json& j, const std::string& field) {
    try {
      load_engine(write_engine("tpb-engine-bad", j), TPB_SOURCE_DIR "/configs");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("--engine"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refused({{"host_per_kernel_s", 45}, {"source", "ms, not s"}}, "host_per_kernel_s");
  refused({{"host_per_kernel_s", 1e-5}}, "source");
  refused({{"host_per_kernel_us", 10}, {"source", "x"}}, "host_per_kernel_us");
  EXPECT_THROW(load_engine("no-such-engine", TPB_SOURCE_DIR "/configs"), BadInput);
}

TEST(ModelEngine, OnlyTheModelBackendTakesAnEngine) {
  try {
    resolve_run_spec({{"backend", "cpu"}, {"engine", "eager-python"}}, 1,
                     TPB_SOURCE_DIR "/configs");
    ADD_FAILURE() << "cpu took --engine";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("--engine"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(
      resolve_run_spec({{"backend", "cpu"}, {"engine", "none"}}, 1, TPB_SOURCE_DIR "/configs"));
}

}  // namespace
}  // namespace tpb
