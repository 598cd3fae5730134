// The results' one JSON mapping against files the previous binary wrote (tests/golden): every
// point read into a PointRecord and written back must print byte for byte as it was read, so
// the typed records change nothing in the schema.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "base/errors.h"
#include "harness/record/json/results_json.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

oj golden(const std::string& name) {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/" + name);
  EXPECT_TRUE(f.good()) << name;
  std::stringstream s;
  s << f.rdbuf();
  return oj::parse(s.str());
}

void expect_points_round_trip(const std::string& name, std::size_t min_points) {
  const oj doc = golden(name);
  ASSERT_TRUE(doc.contains("points")) << name;
  ASSERT_GE(doc["points"].size(), min_points) << name;
  for (std::size_t i = 0; i < doc["points"].size(); ++i) {
    const oj& in = doc["points"][i];
    EXPECT_EQ(to_json(point_from_json(in)).dump(), in.dump()) << name << " point " << i;
  }
}

TEST(ResultsRoundTrip, RunPoint) {
  expect_points_round_trip("results_run.json", 1);
}
TEST(ResultsRoundTrip, SweepPoints) {
  expect_points_round_trip("results_sweep.json", 2);
}
TEST(ResultsRoundTrip, SweepWithOomPoints) {
  expect_points_round_trip("results_sweep_oom.json", 2);
}

// The context block, written by every verb that measures, round-trips from each golden file
// (the run's, two sweeps' and a collectives run's).
TEST(ResultsRoundTrip, ContextOfEveryGolden) {
  for (const char* name : {"results_run.json", "results_sweep.json", "results_sweep_oom.json",
                           "results_collectives.json"}) {
    const oj in = golden(name)["context"];
    EXPECT_EQ(to_json(context_from_json(in)).dump(), in.dump()) << name;
  }
}

// The diagnosis section keeps its keys and their order (the run golden's).
TEST(ResultsRoundTrip, VerdictKeys) {
  const oj in = golden("results_run.json")["diagnosis"];
  ASSERT_FALSE(in.empty());
  std::vector<Verdict> v;
  for (const auto& d : in)
    v.push_back({d["order"].get<int64_t>(), d["topic"], d["level"], d["text"]});
  EXPECT_EQ(to_json(v).dump(), in.dump());
}

// The golden files hold what the cases below depend on, so the round trips above cover them.
TEST(ResultsRoundTrip, GoldenCoverOptionalBlocks) {
  const oj run = golden("results_run.json")["points"][0];
  EXPECT_TRUE(run.contains("verification"));
  EXPECT_TRUE(run.contains("trace"));
  EXPECT_TRUE(run["ranks"][0].contains("host_thread"));
  bool oom = false;
  const oj sweep = golden("results_sweep_oom.json");
  for (const auto& p : sweep["points"])
    oom = oom || (p["status"] == "oom" && p.contains("memory") && p.contains("memory_exhaustion"));
  EXPECT_TRUE(oom);
}

TEST(ResultsRoundTrip, RecordMembersReachTheJson) {
  const oj in = golden("results_run.json")["points"][0];
  PointRecord p = point_from_json(in);
  ASSERT_TRUE(p.metrics && p.ranks && !p.ranks->empty());
  EXPECT_EQ(p.metrics->tokens_per_s, in["metrics"]["tokens_per_s"].get<double>());
  EXPECT_EQ((*p.ranks)[1].rank, 1);
  // A changed member changes the output: the comparison above can fail.
  p.metrics->tokens_per_s += 1;
  EXPECT_NE(to_json(p).dump(), in.dump());
  p = point_from_json(in);
  (*p.ranks)[0].host += "x";
  EXPECT_NE(to_json(p).dump(), in.dump());
  p = point_from_json(in);
  p.trace.reset();  // absent stays absent
  EXPECT_FALSE(to_json(p).contains("trace"));
}

// The summaries inside a point keep the contract's key order: step_time_s as ARCHITECTURE
// lists it, and min/mean/max for every across-ranks figure.
TEST(ResultsRoundTrip, SummaryKeysInContractOrder) {
  const auto keys = [](const nlohmann::ordered_json& j) {
    std::vector<std::string> k;
    for (const auto& [key, _] : j.items()) k.push_back(key);
    return k;
  };
  PointRecord p;
  p.metrics.emplace();
  p.metrics->step_time_s = {2, 3, 4, 2.5, 1, 5, 3};
  p.metrics->across_ranks.mbu = {1, 2, 3};
  const auto j = to_json(p);
  EXPECT_EQ(keys(j["metrics"]["step_time_s"]),
            (std::vector<std::string>{"p50", "p95", "p99", "mean", "min", "max", "n"}));
  EXPECT_EQ(j["metrics"]["step_time_s"]["n"].get<int64_t>(), 3);
  EXPECT_EQ(keys(j["metrics"]["across_ranks"]["mbu"]),
            (std::vector<std::string>{"min", "mean", "max"}));
  EXPECT_EQ(j["metrics"]["across_ranks"]["mbu"]["mean"].get<double>(), 2.0);
}

TEST(ResultsRoundTrip, NullStaysNullAndAbsentStaysAbsent) {
  oj in = golden("results_run.json")["points"][0];
  in["metrics"]["mbu"] = nullptr;  // what a NaN prints as
  in["ranks"][0]["telemetry"]["utilization_gpu_mean"] = nullptr;
  in["ranks"][0].erase("host_thread");
  in.erase("verification");
  const PointRecord p = point_from_json(in);
  EXPECT_TRUE(std::isnan(p.metrics->mbu));
  EXPECT_FALSE((*p.ranks)[0].host_thread);
  EXPECT_EQ(to_json(p).dump(), in.dump());
}

// params.mpi_mode (1.2.0): the golden files predate it, so absent reads as absent; present, it
// round-trips and sits after `collective`.
TEST(ResultsRoundTrip, MpiModeIsOptionalInParams) {
  oj in = golden("results_run.json")["points"][0];
  ASSERT_FALSE(in["params"].contains("mpi_mode"));
  EXPECT_FALSE(point_from_json(in).params.mpi_mode);
  PointRecord p = point_from_json(in);
  p.params.mpi_mode = "blocking";
  const oj out = to_json(p);
  EXPECT_EQ(out["params"]["mpi_mode"], "blocking");
  EXPECT_EQ(to_json(point_from_json(out)).dump(), out.dump());
  auto key = out["params"].begin();
  while (key.key() != "collective") ++key;
  EXPECT_EQ((++key).key(), "mpi_mode");
}

// ranks[].kernel_choices (1.10.0): absent on the CPU goldens; present, it round-trips as a list
// of lines after `telemetry`.
TEST(ResultsRoundTrip, KernelChoicesAreOptionalPerRank) {
  const oj in = golden("results_run.json")["points"][0];
  ASSERT_FALSE(in["ranks"][0].contains("kernel_choices"));
  PointRecord p = point_from_json(in);
  EXPECT_FALSE((*p.ranks)[0].kernel_choices);
  (*p.ranks)[0].kernel_choices = std::vector<std::string>{"4096x1x4096 bf16: algo 6", "b"};
  const oj out = to_json(p);
  EXPECT_EQ(out["ranks"][0]["kernel_choices"][0], "4096x1x4096 bf16: algo 6");
  EXPECT_FALSE(out["ranks"][1].contains("kernel_choices"));
  EXPECT_EQ(to_json(point_from_json(out)).dump(), out.dump());
  auto key = out["ranks"][0].begin();
  while (key.key() != "telemetry") ++key;
  EXPECT_EQ((++key).key(), "kernel_choices");
}

TEST(ResultsRoundTrip, MissingRequiredFieldIsBadInput) {
  oj in = golden("results_run.json")["points"][0];
  in["params"].erase("batch");
  EXPECT_THROW(point_from_json(in), BadInput);
  in = golden("results_run.json")["points"][0];
  in["status"] = "fine";
  EXPECT_THROW(point_from_json(in), BadInput);
}

TEST(ResultsRoundTrip, ParamsIdentityDropsLayersOnlyWhenAsked) {
  const PointParams p = point_from_json(golden("results_run.json")["points"][0]).params;
  EXPECT_TRUE(params_identity_json(p, true).contains("layers"));
  EXPECT_FALSE(params_identity_json(p, false).contains("layers"));
  EXPECT_EQ(to_json(params_from_json(to_json(p))).dump(), to_json(p).dump());
}

}  // namespace
}  // namespace tpb
