// The plain loop an application or OSU/IMB would time: out-of-place fp32 sum MPI_Allreduce,
// back to back, MPI_Wtime around the loop after a barrier, the slowest rank's mean per call.
// That is how `tpbench collectives` reports time_s.mean, so tests/bench/allreduce_side_by_side.sh
// can hold the two side by side. Usage: mpirun -np 2 plain_allreduce MINBYTES MAXBYTES FACTOR
// WARMUP ITERS [single|funneled]; prints "bytes seconds" per size on rank 0. The thread level
// is a choice because it moves the figure: Open MPI 4.1 is slower per small call under
// MPI_THREAD_FUNNELED (tpbench's level when a helper thread runs) than under SINGLE (its level
// otherwise, and MPI_Init's).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  const bool funneled = argc == 7 && std::strcmp(argv[6], "funneled") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 6 && argc != 7) {
    if (rank == 0)
      std::fprintf(stderr, "usage: %s MINBYTES MAXBYTES FACTOR WARMUP ITERS [single|funneled]\n",
                   argv[0]);
    MPI_Finalize();
    return 2;
  }
  const long lo = std::atol(argv[1]), hi = std::atol(argv[2]), factor = std::atol(argv[3]);
  const int warmup = std::atoi(argv[4]), iters = std::atoi(argv[5]);
  for (long bytes = lo; bytes <= hi && factor > 1; bytes *= factor) {
    const int count = static_cast<int>(bytes / sizeof(float));
    std::vector<float> send(count, 1.0f), recv(count, 0.0f);
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) std::printf("%ld %.9g\n", bytes, slowest);
  }
  MPI_Finalize();
  return 0;
}
