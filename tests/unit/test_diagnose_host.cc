// diagnose's host verdict follows where the idle falls (metrics.idle_split): its advice must
// change with the split, or a graph run is told to capture the step in a graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/report/diagnose.h"

namespace tpb {
namespace {

std::string host_text(const IdleSplitRecord& split) {
  PointRecord p;
  p.status = PointStatus::ok;
  p.params.phase = "decode";
  p.metrics.emplace();
  p.metrics->host_gap_fraction = split.in_steps_fraction + split.between_steps_fraction;
  p.metrics->idle_split = split;
  const auto v = diagnose_point(p);
  const auto it =
      std::find_if(v.begin(), v.end(), [](const Verdict& x) { return x.topic == "host"; });
  return it == v.end() ? "" : it->level + ": " + it->text;
}

TEST(DiagnoseHost, GraphIdleIsNotAdvisedAGraph) {
  // The H200's --cuda-graph decode at B=1: 15% of wall idle, all of it inside the steps.
  const std::string graph = host_text({0.15, 0.001, "kernel_boundaries", ""});
  EXPECT_NE(graph.find("problem"), std::string::npos) << graph;
  EXPECT_NE(graph.find("fused kernels"), std::string::npos) << graph;
  EXPECT_NE(graph.find("cannot remove"), std::string::npos) << graph;
  const std::string eager = host_text({0.21, 0.001, "launches_or_kernel_boundaries", ""});
  EXPECT_NE(eager.find("capture the step in a graph"), std::string::npos) << eager;
  const std::string between = host_text({0.02, 0.3, "kernel_boundaries", ""});
  EXPECT_NE(between.find("between steps"), std::string::npos) << between;
  EXPECT_EQ(between.find("fused"), std::string::npos) << between;
  EXPECT_NE(host_text({0.02, 0.01, "host_work", ""}).find("ok"), std::string::npos);
}

TEST(DiagnoseHost, EagerAdviceFollowsWhichPartOfTheIdleDominates) {
  // Eager, with each launch's record: the device waited on the host for most of the idle.
  const std::string launches = host_text({0.20, 0.001, "launches", "", 0.15, 0.03});
  EXPECT_NE(launches.find("capture the step in a graph"), std::string::npos) << launches;
  EXPECT_NE(launches.find("15.0% of wall"), std::string::npos) << launches;
  // The launches were queued ahead: a graph would not help; fewer kernels would.
  const std::string bounds = host_text({0.20, 0.001, "kernel_boundaries", "", 0.02, 0.16});
  EXPECT_NE(bounds.find("fused kernels"), std::string::npos) << bounds;
  EXPECT_NE(bounds.find("a graph would remove only the second"), std::string::npos) << bounds;
  EXPECT_EQ(bounds.find("capture the step"), std::string::npos) << bounds;
}

}  // namespace
}  // namespace tpb
