// The pure parts of runs across hosts: which hosts a TP group spans, the link verdict that
// tells a slow link from a slow rank, and presets that require hosts or a shaped link.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>

#include "base/errors.h"
#include "collectives/topology_presets.h"
#include "harness/record/point_builder.h"
#include "harness/report/diagnose.h"
#include "harness/report/diagnose_link.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

// Four ranks on two hosts (MPI nodes 0 and 2), in TP groups of two by `group_of`.
std::vector<RankRecord> four_ranks(const std::vector<int64_t>& group_of) {
  std::vector<RankRecord> out;
  for (int64_t r = 0; r < 4; ++r) {
    RankRecord x;
    x.rank = r;
    x.host = r < 2 ? "h0" : "h1";
    x.node = r < 2 ? 0 : 2;
    x.group = group_of[static_cast<std::size_t>(r)];
    x.wall_s = 1.0;
    out.push_back(x);
  }
  return out;
}

TEST(TpPlacement, ContiguousGroupsStayInsideHosts) {
  const TpPlacementRecord t = tp_placement(four_ranks({0, 0, 1, 1}));
  EXPECT_EQ(t.hosts, 2);
  EXPECT_FALSE(t.crosses_hosts);
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(t.groups[1].hosts, std::vector<std::string>{"h1"});
  EXPECT_EQ(t.groups[1].ranks, (std::vector<int64_t>{2, 3}));
}

TEST(TpPlacement, StridedGroupsCrossHosts) {
  const TpPlacementRecord t = tp_placement(four_ranks({0, 1, 0, 1}));
  EXPECT_TRUE(t.crosses_hosts);
  EXPECT_EQ(t.groups[0].hosts, (std::vector<std::string>{"h0", "h1"}));
  EXPECT_EQ(t.groups[0].ranks, (std::vector<int64_t>{0, 2}));
}

TEST(TpPlacement, HostsAreMpiNodesNotNames) {
  auto ranks = four_ranks({0, 0, 0, 0});
  for (auto& r : ranks) r.host = "same-name";  // two nodes, one host name (no UTS namespace)
  const TpPlacementRecord t = tp_placement(ranks);
  EXPECT_EQ(t.hosts, 2);
  EXPECT_TRUE(t.crosses_hosts);
}

// A point of one TP group over two hosts with the given per-rank split of a 1 s wall.
PointRecord split_point(double transfer, double wait_rank0, double wait_rank1) {
  PointRecord p;
  p.params.phase = "decode";
  p.params.steps = 10;
  auto ranks = four_ranks({0, 0, 0, 0});
  ranks.resize(2);
  ranks[1].host = "h1";
  ranks[1].node = 1;
  for (auto& r : ranks) r.transfer_s = transfer;
  ranks[0].wait_s = wait_rank0;
  ranks[1].wait_s = wait_rank1;
  p.ranks = ranks;
  p.tp_placement = tp_placement(ranks);
  p.cost = CostRecord{};
  p.cost->comm_bytes = 65536;
  return p;
}

std::vector<Verdict> link_of(const PointRecord& p) {
  std::vector<Verdict> v;
  link_verdicts(p, v);
  return v;
}

TEST(LinkVerdict, TransferAboveWaitIsASlowLink) {
  const auto v = link_of(split_point(0.40, 0.05, 0.02));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].code.value_or(""), "slow_link");
  EXPECT_NE(v[0].text.find("h0, h1"), std::string::npos);
  EXPECT_NE(v[0].text.find("40.0%"), std::string::npos);
  // 64 KB per step in 40 ms of transfer: 1.6 MB/s.
  EXPECT_NE(v[0].text.find("1.6 MB/s"), std::string::npos) << v[0].text;
}

TEST(LinkVerdict, WaitingForARankIsNotTheLink) {
  // A straggler's peer waits 50% of the wall (25% over both ranks); transfer is 20%: above the
  // share, below the wait.
  const auto v = link_of(split_point(0.20, 0.50, 0.0));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(v[0].code.has_value());
  EXPECT_EQ(v[0].level, "ok");
}

TEST(LinkVerdict, ShortTransferIsNotTheLink) {
  const auto v = link_of(split_point(kSlowLinkTransferShare / 2, 0.0, 0.0));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(v[0].code.has_value());
}

TEST(LinkVerdict, NoVerdictInsideOneHost) {
  PointRecord p = split_point(0.9, 0, 0);
  (*p.ranks)[1].node = 0;
  p.tp_placement = tp_placement(*p.ranks);
  EXPECT_TRUE(link_of(p).empty());
}

class PresetEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("OMPI_MCA_pml", "ob1", 1);
    setenv("OMPI_MCA_btl", "self,tcp", 1);
  }
  void TearDown() override {
    unsetenv("OMPI_MCA_pml");
    unsetenv("OMPI_MCA_btl");
    unsetenv("TPB_LINKS_FILE");
  }
  static std::vector<TopologyChoice> prepare(const std::string& preset, int hosts) {
    return prepare_topologies({preset}, "mpi", kConfigs, 2, {"tpbench"}, hosts);
  }
};

TEST_F(PresetEnv, HostsPresetNeedsTwoHosts) {
  EXPECT_EQ(resolve_topology("hosts-tcp", "mpi", kConfigs).min_hosts, 2);
  EXPECT_THROW(prepare("hosts-tcp", 1), BadInput);
  EXPECT_EQ(prepare("hosts-tcp", 2).size(), 1u);
  EXPECT_EQ(prepare("tcp", 1).size(), 1u);  // presets without hosts are unchanged
}

TEST_F(PresetEnv, ShapedPresetNeedsTheLauncherToHaveShapedALink) {
  EXPECT_THROW(prepare("hosts-tcp-1g", 2), BadInput);  // no links file
  const std::string path = ::testing::TempDir() + "links.json";
  std::ofstream(path) << R"({"hosts": [{"name": "h0", "rate": null},
                                       {"name": "h1", "rate": "10gbit"}]})";
  setenv("TPB_LINKS_FILE", path.c_str(), 1);
  EXPECT_THROW(prepare("hosts-tcp-1g", 2), BadInput);  // shaped, but not to 1gbit
  std::ofstream(path) << R"({"hosts": [{"name": "h1", "rate": "1gbit"}]})";
  EXPECT_EQ(prepare("hosts-tcp-1g", 2).size(), 1u);
}

TEST(PresetHosts, BadHostsFieldIsBadInput) {
  const std::string dir = ::testing::TempDir() + "tpb_presets";
  std::filesystem::create_directories(dir + "/topologies");
  std::ofstream(dir + "/topologies/odd.json")
      << R"({"name": "odd", "hosts": {"min": 0}, "mpi": {"launcher_env": {}}})";
  try {
    resolve_topology("odd", "mpi", dir);
    FAIL() << "hosts.min 0 was taken";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("hosts.min"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpb
