// The MPI world as tpbench sees it: ranks, hosts, local ranks, and the TP groups.
#pragma once
#include <mpi.h>

#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "harness/mpi/device_pick.h"

namespace tpb {

struct World {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;  // among ranks on the same host
  // Hosts as MPI sees them (MPI_COMM_TYPE_SHARED), not by name: two hosts with one name stay
  // two. `node` is the world rank of this host's first rank; `nodes` counts the hosts.
  int node = 0, nodes = 1;
  std::string host;
  // MPI_Query_thread's answer: MPI_THREAD_SINGLE unless the command starts helper threads
  // (harness/mpi/thread_need.h).
  int thread_level = 0;
  // The GPU this rank opens (harness/backends/device_setup.h); none on a CPU backend.
  DevicePick device;
};

// "single", "funneled", "serialized" or "multiple".
const char* thread_level_name(int level);

World describe_world(MPI_Comm comm);

// Owns a communicator made by MPI_Comm_split; frees it on destruction.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(MPI_Comm c) : c_(c) {}
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  CommHandle(CommHandle&& o) noexcept : c_(o.c_) { o.c_ = MPI_COMM_NULL; }
  CommHandle& operator=(CommHandle&& o) noexcept {
    std::swap(c_, o.c_);
    return *this;
  }
  ~CommHandle();
  MPI_Comm get() const { return c_; }

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

struct TpGroup {
  CommHandle comm;
  int group = 0;       // index of this rank's TP group
  int group_rank = 0;  // rank inside it
  int groups = 1;
  std::vector<int> members;  // world ranks of this group, by group rank
};

// contiguous: ranks [g*tp, (g+1)*tp) form group g (intra-node when ranks fill nodes in order);
// strided: rank r joins group r % groups (members are `groups` ranks apart, e.g. across
// sockets or nodes), so both layouts can be compared in one launch.
TpGroup split_tp_groups(const World& w, int tp, const std::string& layout);

// Gathers one string per rank to `root` (empty vector elsewhere).
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine, int root);

// Every rank of this host gets each host rank's string, by node-local rank (the order of
// World::local_rank). Collective over `comm`.
std::vector<std::string> allgather_host_strings(MPI_Comm comm, const std::string& mine);

// Gathers raw bytes per rank to `root`, any total size: one MPI_Gatherv per `window` bytes of
// the whole (harness/mpi/gather_plan.h); tests pass a small window to run several rounds.
std::vector<std::vector<char>> gather_bytes(MPI_Comm comm, const void* data, std::size_t n,
                                            int root, long long window = INT_MAX);

}  // namespace tpb
