// Rank -> GPU from the launcher's environment, and the verdict on ranks sharing a GPU.
#include "harness/mpi/device_pick.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace tpb {
namespace {

// One launcher's pair of variables: the local rank, and the ranks on the host.
struct LauncherVars {
  const char* rank;
  const char* size;  // nullptr: this launcher does not say
};

constexpr LauncherVars kLaunchers[] = {
    {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"SLURM_LOCALID", nullptr},
    {"PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"},
};

// A non-negative decimal, or -1.
int parse_count(const std::string& s) {
  if (s.empty() || s.size() > 9 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    return -1;
  return std::atoi(s.c_str());
}

const std::string* find(const EnvMap& env, const char* key) {
  const auto it = env.find(key);
  return it == env.end() ? nullptr : &it->second;
}

// Slurm's pseudo-steps (batch, extern, interactive) are 4294967290 and up: their
// SLURM_LOCALID is the batch script's, 0 on every rank an mpirun inside it starts.
bool in_srun_step(const EnvMap& env) {
  const std::string* step = find(env, "SLURM_STEP_ID");
  if (!step || step->empty() || step->size() > 10 ||
      !std::all_of(step->begin(), step->end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  return std::strtoull(step->c_str(), nullptr, 10) < 4294967290ULL;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

}  // namespace

EnvMap launcher_env() {
  EnvMap env;
  for (const LauncherVars& l : kLaunchers)
    for (const char* k : {l.rank, l.size})
      if (k)
        if (const char* v = std::getenv(k)) env[k] = v;
  if (const char* v = std::getenv("SLURM_STEP_ID")) env["SLURM_STEP_ID"] = v;
  return env;
}

LauncherLocalRank launcher_local_rank(const EnvMap& env) {
  std::string skipped;
  for (const LauncherVars& l : kLaunchers) {
    const std::string* v = find(env, l.rank);
    if (!v) continue;
    if (std::string(l.rank) == "SLURM_LOCALID" && !in_srun_step(env)) {
      skipped += "; SLURM_LOCALID outside an srun step (the batch script's) was not used";
      continue;
    }
    const int r = parse_count(*v);
    if (r < 0) {
      skipped += std::string("; ") + l.rank + "='" + *v + "' is not a local rank";
      continue;
    }
    const std::string* s = l.size ? find(env, l.size) : nullptr;
    return {r, s ? parse_count(*s) : -1, l.rank};
  }
  return {-1, -1, "no launcher local rank in the environment" + skipped};
}

int device_for_local_rank(int local_rank, int visible) {
  if (visible <= 0 || local_rank < 0) return -1;
  return local_rank % visible;
}

SharingVerdict gpu_sharing_verdict(const std::vector<std::string>& bus_ids, int me,
                                   const std::vector<std::string>& collectives,
                                   const std::string& host, const char* cuda_visible_devices) {
  SharingVerdict v;
  if (me < 0 || me >= static_cast<int>(bus_ids.size()) || bus_ids[me].empty()) return v;
  std::vector<int> same;  // local ranks on this GPU, me included
  for (int i = 0; i < static_cast<int>(bus_ids.size()); ++i)
    if (bus_ids[i] == bus_ids[me]) same.push_back(i);
  if (same.size() < 2) return v;
  for (int i : same)
    if (i != me) v.shares_with.push_back(i);
  const bool nccl = std::find(collectives.begin(), collectives.end(), "nccl") != collectives.end();
  const std::string what = "local ranks " + join(same) + " on host " + host + " share GPU " +
                           bus_ids[me] + " (" + std::to_string(bus_ids.size()) +
                           " ranks on the host; CUDA_VISIBLE_DEVICES=" +
                           (cuda_visible_devices ? cuda_visible_devices : "unset") + ")";
  if (nccl) {
    v.action = SharingAction::refuse;
    v.message = "--collective nccl: " + what +
                ": NCCL needs one GPU per rank; launch at most one rank per GPU or use "
                "--collective mpi";
  } else {
    v.action = SharingAction::warn;
    v.message = what +
                ": allowed under --collective mpi, but the ranks time-slice the GPU, so "
                "use this run for function, not performance";
  }
  return v;
}

std::string local_rank_mismatch(const LauncherLocalRank& launcher, int mpi_local_rank) {
  if (launcher.local_rank < 0 || launcher.local_rank == mpi_local_rank) return "";
  return launcher.source + "=" + std::to_string(launcher.local_rank) +
         " but MPI's node-local rank is " + std::to_string(mpi_local_rank) +
         ": the GPU was picked from " + launcher.source + " before MPI_Init";
}

std::string sysfs_pci_name(const std::string& bus_id) {
  std::string s;
  for (char c : bus_id) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto colon = s.find(':');
  // CUDA spells the domain with 8 digits ("00000000:17:00.0"); sysfs with 4.
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

int pci_numa_node(const std::string& sysfs_root, const std::string& bus_id) {
  if (bus_id.empty()) return -1;
  std::ifstream in(sysfs_root + "/bus/pci/devices/" + sysfs_pci_name(bus_id) + "/numa_node");
  int node = -1;
  if (!(in >> node)) return -1;
  return node < 0 ? -1 : node;  // the kernel writes -1 on machines without NUMA
}

}  // namespace tpb
