// Side by side under mpirun: a plain blocking MPI_Allreduce loop against tpbench's own
// all-reduce path (the TP layer's Collective) in both --mpi-mode values: blocking (the same
// MPI_Allreduce with the hang watchdog armed around it) and nonblocking (MPI_Iallreduce polled
// with a deadline), timed the same way, in-place fp32 sum. Run: mpirun -np 2
// build/tests/bench_allreduce. Each iteration is timed on every rank and the slowest rank's time
// is reported (manual time), so every row means "time until the last rank has the result", like
// nccl-tests' time. tests/bench/allreduce_side_by_side.sh compares whole `tpbench collectives`
// runs with a plain loop instead.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <chrono>
#include <memory>
#include <vector>

#include "collectives/mpi/mpi_collective.h"

namespace {

using Clock = std::chrono::steady_clock;

// Every rank must run the same iterations or the collectives would mismatch, so iteration
// counts are fixed (no adaptive search) and identical on all ranks.
constexpr int kIters = 200;

double slowest(double mine) {
  double all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return all;
}

void set_counters(benchmark::State& state, std::size_t bytes) {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  // busbw = algbw * 2(n-1)/n (collectives/bus_bandwidth.h), in bytes/s, averaged per iteration.
  state.counters["busbw"] = benchmark::Counter(
      static_cast<double>(bytes) * 2.0 * (n - 1) / n * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_PlainMpiAllreduce(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0)) / sizeof(float);
  std::vector<float> buf(count, 1.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    state.SetIterationTime(slowest(std::chrono::duration<double>(Clock::now() - t0).count()));
    buf.assign(count, 1.0f);  // keep values finite; outside the timed span
  }
  set_counters(state, count * sizeof(float));
}

void tpbench_collective(benchmark::State& state, tpb::MpiMode mode) {
  const auto count = static_cast<std::size_t>(state.range(0)) / sizeof(float);
  std::vector<float> buf(count, 1.0f);
  auto coll = tpb::make_mpi_collective(MPI_COMM_WORLD, tpb::MpiWait{.mode = mode, .timeout_s = 60});
  coll->barrier();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    coll->all_reduce(buf.data(), count, tpb::DType::fp32);
    state.SetIterationTime(slowest(std::chrono::duration<double>(Clock::now() - t0).count()));
    buf.assign(count, 1.0f);
  }
  set_counters(state, count * sizeof(float));
}

void BM_TpbenchCollectiveBlocking(benchmark::State& state) {
  tpbench_collective(state, tpb::MpiMode::blocking);
}

void BM_TpbenchCollectiveNonblocking(benchmark::State& state) {
  tpbench_collective(state, tpb::MpiMode::nonblocking);
}

BENCHMARK(BM_PlainMpiAllreduce)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 22)
    ->Iterations(kIters)
    ->UseManualTime();
BENCHMARK(BM_TpbenchCollectiveBlocking)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 22)
    ->Iterations(kIters)
    ->UseManualTime();
BENCHMARK(BM_TpbenchCollectiveNonblocking)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 22)
    ->Iterations(kIters)
    ->UseManualTime();

// Only rank 0 prints; the others run the same loops silently.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  // SINGLE, as tpbench with no helper thread: the blocking collective's watchdog ticks on a
  // timer signal (collectives/signal_ticker.h), not on a thread.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  benchmark::Initialize(&argc, argv);
  if (rank == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
