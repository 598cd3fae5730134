// A toy backend added the way a new one is: its VerbBackend here, one entry in a registry, and
// `run` driven through the seam (run_on) with it. The toy is the model's virtual ranks behind a
// device of its own name at a tenth of the profile's peaks, so every figure the verb asks the
// seam for is told apart from the model's: if run asked a backend's name anywhere, or took its
// caps or peaks from anywhere but the seam, the results would show the model's instead.
// Its own main: run_on gathers over MPI, which the leak-checked tpb_unit_tests never starts.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "harness/verbs/seam/model_backend.h"
#include "harness/verbs/seam/seam_registry.h"
#include "harness/verbs/verbs.h"

namespace tpb {
namespace {

constexpr double kToyShare = 0.1;  // of the profile's peaks

class ToyBackend final : public VerbBackend {
 public:
  explicit ToyBackend(const DeviceOptions& o) : inner_(open_model_backend(o)) {}
  int points = 0;  // run_point calls, so the test sees the verb ran its point here

  DeviceCaps caps(const RunSpec& s) const override { return toy(inner_->caps(s)); }
  DeviceCaps serve_caps(const ServeSpec& s) const override { return toy(inner_->serve_caps(s)); }
  DeviceCaps collectives_caps(const CollectivesSpec& s) const override {
    return toy(inner_->collectives_caps(s));
  }
  void adopt(RunSpec& s) const override { s.hardware_note = "toy device"; }
  std::string unsupported_reason(const RunSpec& s) const override {
    return inner_->unsupported_reason(s);
  }
  void accept(const CollectivesSpec& s) const override { inner_->accept(s); }
  Peaks peaks(const RunSpec& s, const World& w) override {
    Peaks p = inner_->peaks(s, w);
    p.flops *= kToyShare;
    p.bw *= kToyShare;
    p.source = "toy";
    return p;
  }
  void describe(RunContextRecord& c, const std::string& topology, const std::string& collective,
                const std::string& config_dir) const override {
    inner_->describe(c, topology, collective, config_dir);
  }
  void describe_sweep(RunContextRecord& c, const std::vector<RunSpec>& specs) const override {
    inner_->describe_sweep(c, specs);
  }
  std::optional<PointOutcome> run_point(const RunSpec& s, const World& w, const Peaks& p) override {
    ++points;
    return inner_->run_point(s, w, p);
  }
  std::optional<PointOutcome> sweep_point(const RunSpec& s, const World& w, const Peaks& p,
                                          MPI_Comm c) override {
    ++points;
    return inner_->sweep_point(s, w, p, c);
  }
  ServeResult serve_load(const ServeSpec& s, std::size_t i, const World& w,
                         const Peaks& p) override {
    return inner_->serve_load(s, i, w, p);
  }
  int collectives_ranks(const CollectivesSpec& s, const World& w) const override {
    return inner_->collectives_ranks(s, w);
  }
  std::vector<std::string> collectives_start(const CollectivesSpec& s, const World& w) override {
    return inner_->collectives_start(s, w);
  }
  std::vector<CollPointRecord> collectives_size(const CollectivesSpec& s, const CollCounts& c,
                                                const World& w,
                                                const std::vector<std::string>& h) override {
    return inner_->collectives_size(s, c, w, h);
  }

 private:
  static DeviceCaps toy(DeviceCaps c) {
    c.name = "toy: " + c.name;
    return c;
  }
  std::unique_ptr<VerbBackend> inner_;
};

// The registry line a new backend adds, here added by the test to the built-in table.
BackendSeams seams_with_toy(ToyBackend*& opened) {
  BackendSeams seams = builtin_seams();
  seams.add({"toy", [&opened](const DeviceOptions& o) {
               auto b = std::make_unique<ToyBackend>(o);
               opened = b.get();
               return std::unique_ptr<VerbBackend>(std::move(b));
             }});
  return seams;
}

// A run the model's traits accept (virtual ranks, one process): 2 ranks of tiny, 3 steps.
RunSpec toy_spec(const std::string& out) {
  const nlohmann::json cfg = {{"backend", "model"},
                              {"world", 2},
                              {"tp", 2},
                              {"model", "tiny"},
                              {"dtype", "bf16"},
                              {"batch", 4},
                              {"steps", 3},
                              {"warmup", 1},
                              {"out", out},
                              {"hardware", "h100-sxm:datasheet"}};
  return resolve_run_spec(cfg, 1, TPB_SOURCE_DIR "/configs");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(ToyBackend, RegistryOpensItByNameBesideTheBuiltIns) {
  ToyBackend* opened = nullptr;
  const BackendSeams seams = seams_with_toy(opened);
  const auto toy = seams.open(DeviceOptions{"toy"});
  EXPECT_EQ(opened, toy.get());
  const auto model = seams.open(DeviceOptions{"model"});
  EXPECT_EQ(dynamic_cast<ToyBackend*>(model.get()), nullptr);
  // A name no entry holds is a device, which the device registry refuses by name.
  try {
    seams.open(DeviceOptions{"tpu"});
    ADD_FAILURE() << "an unknown backend opened";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--backend: 'tpu' is not built into this tpbench", 0), 0u)
        << e.what();
  }
  EXPECT_NE(seams.open(DeviceOptions{"cpu"}), nullptr);
}

TEST(ToyBackend, RunGoesThroughTheSeam) {
  const std::string out =
      std::filesystem::temp_directory_path() / ("tpb-toy-" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  ToyBackend* opened = nullptr;
  const auto backend = seams_with_toy(opened).open(DeviceOptions{"toy"});
  RunSpec spec = toy_spec(out);
  backend->adopt(spec);
  CliResult cli;
  cli.argv = {"tpbench", "run", "--toy"};
  const World w = describe_world(MPI_COMM_WORLD);
  ASSERT_EQ(run_on(cli, w, spec, *backend), 0);
  EXPECT_EQ(opened->points, 1);

  const nlohmann::json r = read_json(out + "/results.json");
  const auto& peaks = r["context"]["peaks"][0];
  EXPECT_EQ(peaks["source"], "toy");
  auto model = open_model_backend(DeviceOptions{"model"});
  const Peaks model_peaks = model->peaks(spec, w);
  EXPECT_DOUBLE_EQ(peaks["bw"].get<double>(), model_peaks.bw * kToyShare);
  EXPECT_EQ(r["context"]["device"]["name"].get<std::string>().rfind("toy: ", 0), 0u)
      << r["context"]["device"].dump();
  ASSERT_EQ(r["points"].size(), 1u);
  const auto& p = r["points"][0];
  EXPECT_EQ(p["status"], "ok");
  const nlohmann::json& warnings = p["warnings"];
  EXPECT_NE(std::find(warnings.begin(), warnings.end(), "toy device"), warnings.end())
      << warnings.dump();
  EXPECT_EQ(p["metrics"]["peaks"]["source"], "toy");
  // The model prices compute at the peaks it is given: the toy's steps are slower, and its MBU
  // moves the same bytes per step against the toy's bandwidth.
  const auto as_model = model->run_point(spec, w, model_peaks);
  ASSERT_TRUE(as_model && as_model->record.metrics);
  const MetricsRecord& m = *as_model->record.metrics;
  const double step = p["metrics"]["step_time_s"]["p50"].get<double>();
  EXPECT_GT(step, 2 * m.step_time_s.p50);
  const double bytes = p["metrics"]["mbu"].get<double>() * step * peaks["bw"].get<double>();
  EXPECT_NEAR(bytes, m.mbu * m.step_time_s.p50 * model_peaks.bw, 1e-9 * bytes);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace tpb

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  MPI_Init(&argc, &argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
