// A/B of the instrumentation's cost (issue 5 goal: under 1% step time at the tiny model's
// B=1): the same decode step of the tiny model (tp=1, CpuDevice, a one-rank MPI collective)
// run with a Timeline, as point_runner records it, and with none, interleaved in one process
// (ABBA order, so drift and warm-up hit both arms alike). Reports medians and their ratio.
// Own main: the collective needs MPI_Init. TPB_AB_PAIRS sets the pairs (default 15).
#include <benchmark/benchmark.h>
#include <mpi.h>
#include <time.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "collectives/mpi/mpi_collective.h"
#include "harness/analysis/stats.h"
#include "layers/cpu/cpu_device.h"
#include "layers/model_shape.h"
#include "layers/timeline.h"
#include "tp_model/tp_model.h"

namespace tpb {
namespace {

double median_of(const std::vector<double>& v) {
  return percentile(v, 50);
}

// This thread's CPU time: on a shared machine, time slices taken by other processes inflate
// wall time in both arms but not this. (BLAS runs on this thread: OPENBLAS_NUM_THREADS=1.)
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct StepTime {
  double wall_s = 0, cpu_s = 0;
};

int pairs_from_env() {
  const char* s = std::getenv("TPB_AB_PAIRS");
  const int n = s ? std::atoi(s) : 15;
  return n > 0 ? n : 15;
}

void BM_DecodeStepTimelineAB(benchmark::State& state) {
  const int64_t batch = state.range(0);
  CpuDevice dev{DeviceOptions{}};
  auto coll = make_mpi_collective(MPI_COMM_SELF, MpiWait{.timeout_s = 0});  // one rank: no wait
  TpModelConfig mc;
  mc.shape = load_model("tiny", TPB_SOURCE_DIR "/configs");
  mc.layers = mc.shape.n_layers;
  mc.tp = 1;
  mc.batch = batch;
  mc.context = 1024;
  TpModel model(dev, mc);
  const std::size_t per_step = static_cast<std::size_t>(mc.layers) * (kOpsPerLayer + 2) + 2;
  Timeline tl(dev, per_step);

  // Arm A: as point_runner does it (a step segment around the stamped ops). Arm B: nullptr.
  auto step_s = [&](bool instrumented, int s) {
    const double c0 = thread_cpu_s();
    const int64_t t0 = steady_now_ns();
    if (instrumented) {
      tl.clear();
      const std::size_t i = tl.open(Op::step, 0, s);
      model.step(*coll, &tl, s, nullptr);
      dev.synchronize();
      tl.close(i);
    } else {
      model.step(*coll, nullptr, s, nullptr);
      dev.synchronize();
    }
    const double wall = static_cast<double>(steady_now_ns() - t0) * 1e-9;
    return StepTime{wall, thread_cpu_s() - c0};
  };

  const int pairs = pairs_from_env();
  std::vector<double> on, off, on_cpu, off_cpu, pair_ratio;
  for (auto _ : state) {
    for (int w = 0; w < 2; ++w) step_s(w == 0, -1 - w);  // warm-up, excluded
    for (int p = 0; p < pairs; ++p) {
      const bool on_first = p % 2 == 0;  // ABBA
      const StepTime a = step_s(on_first, p), b = step_s(!on_first, p);
      const StepTime& t_on = on_first ? a : b;
      const StepTime& t_off = on_first ? b : a;
      on.push_back(t_on.wall_s);
      off.push_back(t_off.wall_s);
      on_cpu.push_back(t_on.cpu_s);
      off_cpu.push_back(t_off.cpu_s);
      pair_ratio.push_back(t_on.wall_s / t_off.wall_s);
    }
  }
  const double m_on = median_of(on), m_off = median_of(off);
  const double c_on = median_of(on_cpu), c_off = median_of(off_cpu);
  const double pr = median_of(pair_ratio);
  std::vector<double> dev_pct;
  for (double r : pair_ratio) dev_pct.push_back(std::abs(r - pr) * 100.0);
  state.counters["on_ms"] = m_on * 1e3;
  state.counters["off_ms"] = m_off * 1e3;
  state.counters["ratio"] = m_on / m_off;
  state.counters["overhead_pct"] = (m_on / m_off - 1.0) * 100.0;
  state.counters["pair_ratio_median"] = pr;
  state.counters["noise_mad_pct"] = median_of(dev_pct);  // spread of the pairwise ratios
  state.counters["cpu_ratio"] = c_on / c_off;            // the same medians in thread CPU time
  state.counters["stamps_per_step"] = 2.0 * static_cast<double>(tl.size());
  state.counters["pairs"] = pairs;
}
BENCHMARK(BM_DecodeStepTimelineAB)
    ->Arg(1)
    ->Arg(8)
    ->ArgName("batch")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpb

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    MPI_Finalize();
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
