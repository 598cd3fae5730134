// Which GPU a rank opens, decided before MPI_Init from the launcher's local rank, and whether
// ranks on one host may share a GPU. Pure functions over environment maps and bus ids (no MPI,
// no CUDA), so every launcher's case is a unit test.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace tpb {

using EnvMap = std::map<std::string, std::string>;

// The launcher's word on this process's rank among the ranks of its host.
struct LauncherLocalRank {
  int local_rank = -1;  // -1: no launcher said; MPI's node-local rank decides after MPI_Init
  int local_size = -1;  // -1: not said
  std::string source;   // the variable read ("OMPI_COMM_WORLD_LOCAL_RANK", ...), or why none
};

// The variables launcher_local_rank reads, taken from this process's environment.
EnvMap launcher_env();

// Open MPI (OMPI_COMM_WORLD_LOCAL_RANK), MPICH/Hydra (MPI_LOCALRANKID), Slurm inside an srun
// step (SLURM_LOCALID), PMIx (PMIX_LOCAL_RANK), in that order: mpirun inside a Slurm batch
// script inherits the batch step's SLURM_LOCALID=0 on every rank, so the MPI launchers' own
// variables come first. PMIX_RANK alone is a world rank, not a local one, and is not used.
LauncherLocalRank launcher_local_rank(const EnvMap& env);

// The CUDA index (within the visible set) for `local_rank`: local_rank % visible, so ranks
// beyond the visible GPUs share one (gpu_sharing_verdict decides whether that may run); -1
// when no GPU is visible or the rank is unknown.
int device_for_local_rank(int local_rank, int visible);

// What this rank picked, before MPI_Init where the launcher said its local rank, else after.
struct DevicePick {
  LauncherLocalRank launcher;
  int index = -1;          // CUDA index in this process's visible set; -1: none picked
  int visible = 0;         // GPUs this process sees
  std::string pci_bus_id;  // "" when none
  bool before_mpi_init = false;
  bool shared = false;  // another rank on this host opened the same GPU (--collective mpi only)
  std::string reason;   // why nothing was picked ("" when a GPU was)
};

enum class SharingAction { none, warn, refuse };

struct SharingVerdict {
  SharingAction action = SharingAction::none;
  std::string message;           // one line; empty for none
  std::vector<int> shares_with;  // local ranks on this host with my GPU, me excluded
};

// `bus_ids[i]`: the GPU local rank i opened ("" for none). NCCL cannot run two ranks of one
// communicator on one GPU, so any "nccl" among `collectives` refuses a shared GPU; the MPI
// transport runs (time-sliced on the GPU) with a warning. `cuda_visible_devices` is quoted in
// the message, since an inherited CUDA_VISIBLE_DEVICES=0 is the usual cause.
SharingVerdict gpu_sharing_verdict(const std::vector<std::string>& bus_ids, int me,
                                   const std::vector<std::string>& collectives,
                                   const std::string& host, const char* cuda_visible_devices);

// A line when the launcher's local rank and MPI's node-local rank (MPI_Comm_split_type
// SHARED) differ, "" when they agree or the launcher said nothing.
std::string local_rank_mismatch(const LauncherLocalRank& launcher, int mpi_local_rank);

// The NUMA node of a PCI device from sysfs (`root`/bus/pci/devices/<bus>/numa_node), -1 when
// unknown. `bus_id` as CUDA spells it ("00000000:17:00.0" or "0000:17:00.0", any case).
int pci_numa_node(const std::string& sysfs_root, const std::string& bus_id);

// The sysfs name of a PCI bus id: lower case, a 4-digit domain ("0000:17:00.0").
std::string sysfs_pci_name(const std::string& bus_id);

}  // namespace tpb
