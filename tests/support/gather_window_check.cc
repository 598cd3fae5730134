// Run under `mpirun -np 2`: gather_bytes through several small windows (the rounds a trace past
// 2 GiB takes, at a size that runs in CI), every rank's bytes back whole at the root; exit 1
// and the first wrong byte otherwise.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "harness/mpi/world.h"

namespace {

char byte_of(int rank, std::size_t i) {
  return static_cast<char>((rank * 31 + static_cast<int>(i)) % 251);
}

// Rank r sends 11 * r + 3 bytes (rank 1: 14, across three windows of 7 with rank 0's 3).
int check(int window) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<char> mine(static_cast<std::size_t>(11 * rank + 3));
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(rank, i);
  const auto got = tpb::gather_bytes(MPI_COMM_WORLD, mine.data(), mine.size(), 0, window);
  if (rank != 0) return 0;
  if (got.size() != static_cast<std::size_t>(size)) return std::printf("no rank list\n"), 1;
  for (int r = 0; r < size; ++r) {
    const auto& g = got[static_cast<std::size_t>(r)];
    if (g.size() != static_cast<std::size_t>(11 * r + 3))
      return std::printf("window %d: rank %d: %zu bytes\n", window, r, g.size()), 1;
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] != byte_of(r, i))
        return std::printf("window %d: rank %d byte %zu wrong\n", window, r, i), 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int bad = 0;
  for (int window : {1, 7, 1 << 30}) bad |= check(window);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("gather windows: %s\n", bad ? "FAIL" : "ok");
  MPI_Finalize();
  return bad;
}
