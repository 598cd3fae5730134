// Rank -> GPU as a pure function of each launcher's environment, the verdict on ranks sharing a
// GPU (NCCL refuses, MPI warns), and the GPU's NUMA node from a fake sysfs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "harness/backends/device_setup.h"
#include "harness/mpi/device_pick.h"
#include "harness/record/run_context.h"

namespace tpb {
namespace {

TEST(DevicePick, OpenMpiLocalRank) {
  const auto l = launcher_local_rank(
      {{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}});
  EXPECT_EQ(l.local_rank, 3);
  EXPECT_EQ(l.local_size, 8);
  EXPECT_EQ(l.source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(DevicePick, MpirunInsideASlurmBatchScriptIgnoresItsSlurmLocalId) {
  // The batch script's SLURM_LOCALID=0 reaches every rank mpirun starts: Open MPI's own wins.
  const auto l = launcher_local_rank({{"SLURM_LOCALID", "0"},
                                      {"SLURM_STEP_ID", "4294967291"},
                                      {"OMPI_COMM_WORLD_LOCAL_RANK", "5"}});
  EXPECT_EQ(l.local_rank, 5);
  EXPECT_EQ(l.source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(DevicePick, MpichHydraLocalRank) {
  const auto l = launcher_local_rank({{"MPI_LOCALRANKID", "2"}, {"MPI_LOCALNRANKS", "4"}});
  EXPECT_EQ(l.local_rank, 2);
  EXPECT_EQ(l.local_size, 4);
  EXPECT_EQ(l.source, "MPI_LOCALRANKID");
}

TEST(DevicePick, SlurmLocalIdOnlyInsideAnSrunStep) {
  const auto step = launcher_local_rank({{"SLURM_LOCALID", "6"}, {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(step.local_rank, 6);
  EXPECT_EQ(step.source, "SLURM_LOCALID");
  // The batch pseudo-step, or no step at all: not a task's local id.
  for (const EnvMap& env : {EnvMap{{"SLURM_LOCALID", "0"}, {"SLURM_STEP_ID", "4294967291"}},
                            EnvMap{{"SLURM_LOCALID", "0"}}}) {
    const auto l = launcher_local_rank(env);
    EXPECT_EQ(l.local_rank, -1);
    EXPECT_NE(l.source.find("SLURM_LOCALID outside an srun step"), std::string::npos) << l.source;
  }
}

TEST(DevicePick, PmixNeedsALocalRankNotTheWorldRank) {
  EXPECT_EQ(launcher_local_rank({{"PMIX_RANK", "9"}}).local_rank, -1);
  const auto l = launcher_local_rank({{"PMIX_RANK", "9"}, {"PMIX_LOCAL_RANK", "1"}});
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.source, "PMIX_LOCAL_RANK");
}

TEST(DevicePick, NoLauncherOrGarbageFallsBackToMpi) {
  EXPECT_EQ(launcher_local_rank({}).local_rank, -1);
  EXPECT_EQ(launcher_local_rank({}).source, "no launcher local rank in the environment");
  const auto bad = launcher_local_rank({{"OMPI_COMM_WORLD_LOCAL_RANK", "x1"}});
  EXPECT_EQ(bad.local_rank, -1);
  EXPECT_NE(bad.source.find("OMPI_COMM_WORLD_LOCAL_RANK='x1' is not a local rank"),
            std::string::npos);
}

TEST(DevicePick, DeviceForLocalRank) {
  EXPECT_EQ(device_for_local_rank(3, 8), 3);
  EXPECT_EQ(device_for_local_rank(9, 8), 1);  // beyond the GPUs: shares GPU 1 (then judged)
  EXPECT_EQ(device_for_local_rank(1, 1), 0);  // an inherited CUDA_VISIBLE_DEVICES=0
  EXPECT_EQ(device_for_local_rank(0, 0), -1);
  EXPECT_EQ(device_for_local_rank(-1, 8), -1);
}

TEST(DevicePick, OwnGpuPerRankIsNoVerdict) {
  const auto v = gpu_sharing_verdict({"A", "B"}, 1, {"nccl"}, "h", nullptr);
  EXPECT_EQ(v.action, SharingAction::none);
  EXPECT_TRUE(v.message.empty());
  // CPU ranks open no GPU: nothing to share.
  EXPECT_EQ(gpu_sharing_verdict({"", ""}, 0, {"nccl"}, "h", nullptr).action, SharingAction::none);
}

TEST(DevicePick, NcclRefusesASharedGpuInOneLine) {
  const auto v = gpu_sharing_verdict({"0000:17:00.0", "0000:17:00.0"}, 1, {"nccl"}, "h1", "0");
  EXPECT_EQ(v.action, SharingAction::refuse);
  EXPECT_EQ(
      v.message.rfind("--collective nccl: local ranks 0,1 on host h1 share GPU 0000:17:00.0", 0),
      0u)
      << v.message;
  EXPECT_NE(v.message.find("CUDA_VISIBLE_DEVICES=0"), std::string::npos);
  EXPECT_EQ(v.message.find('\n'), std::string::npos);
  // A sweep that lists both transports refuses too: its nccl points would fail.
  EXPECT_EQ(gpu_sharing_verdict({"A", "A"}, 0, {"mpi", "nccl"}, "h", nullptr).action,
            SharingAction::refuse);
}

TEST(DevicePick, MpiWarnsAndNamesWhoShares) {
  // 4 ranks on 2 GPUs: local rank 1 shares GPU B with local rank 3.
  const auto v = gpu_sharing_verdict({"A", "B", "A", "B"}, 1, {"mpi"}, "h", nullptr);
  EXPECT_EQ(v.action, SharingAction::warn);
  EXPECT_EQ(v.shares_with, std::vector<int>{3});
  EXPECT_NE(v.message.find("allowed under --collective mpi"), std::string::npos);
  EXPECT_NE(v.message.find("CUDA_VISIBLE_DEVICES=unset"), std::string::npos);
}

TEST(DevicePick, LauncherAndMpiDisagree) {
  const LauncherLocalRank l{2, 4, "SLURM_LOCALID"};
  EXPECT_EQ(local_rank_mismatch(l, 2), "");
  EXPECT_EQ(local_rank_mismatch(l, 3),
            "SLURM_LOCALID=2 but MPI's node-local rank is 3: the GPU was picked from "
            "SLURM_LOCALID before MPI_Init");
  EXPECT_EQ(local_rank_mismatch({}, 3), "");
}

TEST(DevicePick, GpuNumaNodeFromAFakeSysfs) {
  EXPECT_EQ(sysfs_pci_name("00000000:AB:00.0"), "0000:ab:00.0");
  EXPECT_EQ(sysfs_pci_name("0000:17:00.0"), "0000:17:00.0");
  const auto root =
      std::filesystem::temp_directory_path() / ("tpb_sysfs_" + std::to_string(::getpid()));
  for (const auto& [bus, node] :
       {std::pair{"0000:ab:00.0", "1\n"}, std::pair{"0000:17:00.0", "-1\n"}}) {
    std::filesystem::create_directories(root / "bus/pci/devices" / bus);
    std::ofstream(root / "bus/pci/devices" / bus / "numa_node") << node;
  }
  EXPECT_EQ(pci_numa_node(root.string(), "00000000:AB:00.0"), 1);
  EXPECT_EQ(pci_numa_node(root.string(), "0000:17:00.0"), -1);  // no NUMA on that machine
  EXPECT_EQ(pci_numa_node(root.string(), "0000:99:00.0"), -1);  // no such device
  EXPECT_EQ(pci_numa_node(root.string(), ""), -1);
  std::filesystem::remove_all(root);
}

TEST(DevicePick, IntentAndPickBeforeMpiInit) {
  const auto run = device_intent("run", {{"backend", "cuda"}});
  EXPECT_TRUE(run.opens_device);
  EXPECT_EQ(run.collectives, std::vector<std::string>{"nccl"});  // CUDA's default transport
  const auto sweep = device_intent("sweep", {{"backend", "cuda"}, {"collective", "mpi,nccl"}});
  EXPECT_EQ(sweep.collectives, (std::vector<std::string>{"mpi", "nccl"}));
  EXPECT_FALSE(device_intent("info", {{"backend", "cuda"}}).opens_device);
  // The CPU backend picks no GPU, but the launcher's local rank is still read and recorded.
  const DevicePick p =
      pick_device_before_mpi(device_intent("run", {}), {{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_EQ(p.launcher.local_rank, 1);
  EXPECT_EQ(p.index, -1);
  EXPECT_FALSE(p.before_mpi_init);
  EXPECT_EQ(p.reason, "--backend cpu: no GPU");
  const DevicePick later = pick_device_before_mpi(device_intent("run", {}), {});
  EXPECT_EQ(later.reason.rfind("picked after MPI_Init: ", 0), 0u) << later.reason;
}

TEST(DevicePick, BindingRecordsTheGpuAndItsNumaNode) {
  const auto root =
      std::filesystem::temp_directory_path() / ("tpb_sysfs_b" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "bus/pci/devices/0000:17:00.0");
  std::ofstream(root / "bus/pci/devices/0000:17:00.0/numa_node") << "1\n";
  World w;
  w.device.index = 1;
  w.device.pci_bus_id = "00000000:17:00.0";
  w.device.before_mpi_init = true;
  w.device.launcher.source = "SLURM_LOCALID";
  const RankDeviceRecord d = device_binding(w, "16-31", root.string());
  EXPECT_EQ(d.device_index, 1);
  EXPECT_EQ(d.pci_bus_id, "00000000:17:00.0");
  EXPECT_EQ(d.numa_node, 1);
  EXPECT_EQ(d.cpu_set, "16-31");
  EXPECT_EQ(d.picked_from, "SLURM_LOCALID");
  EXPECT_TRUE(d.nccl_transports.is_null());
  ASSERT_EQ(d.reasons.size(), 1u);  // only the transports wait
  EXPECT_EQ(d.reasons[0].rfind("nccl_transports: ", 0), 0u);
  std::filesystem::remove_all(root);
}

TEST(DevicePick, CpuRankRecordsNullsWithReasons) {
  World w;
  w.device = pick_device_before_mpi(device_intent("run", {}), {});
  const RankDeviceRecord d = device_binding(w, "0,1", "/nonexistent");
  EXPECT_TRUE(d.device_index.is_null());
  EXPECT_TRUE(d.pci_bus_id.is_null());
  EXPECT_TRUE(d.numa_node.is_null());
  EXPECT_TRUE(d.nccl_transports.is_null());
  EXPECT_EQ(d.cpu_set, "0,1");
  EXPECT_EQ(d.reasons.size(), 4u);
}

}  // namespace
}  // namespace tpb
