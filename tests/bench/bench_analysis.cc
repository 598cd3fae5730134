// Cost of analyze() on a large synthetic point: 8 ranks in one TP group, 1M all-reduce
// records in total (125k per rank), with and without the 12 compute records per layer that
// a real trace carries. Analysis runs once per point, so it must stay well under a second.
#include <benchmark/benchmark.h>

#include <random>

#include "harness/analysis/analysis.h"

namespace tpb {
namespace {

constexpr int kRanks = 8;
constexpr int kLayers = 32;  // 64 all-reduces per step
constexpr int kStepsFor1M = 1'000'000 / (kRanks * 2 * kLayers);

AnalysisInput make_input(bool with_compute) {
  AnalysisInput in;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> jitter(0, 20e-6);
  in.ranks.resize(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    RankTrace& t = in.ranks[r];
    t.rank = r, t.group = 0, t.group_rank = r;
    double now = 0;
    auto push = [&](int step, int layer, Op op, double dur) {
      t.segs.push_back(SegmentRecord{now, now + dur, step, static_cast<int16_t>(layer), op,
                                     static_cast<uint8_t>(op_is_collective(op) ? 1 : 0)});
      now += dur;
    };
    for (int s = 0; s < kStepsFor1M; ++s) {
      const std::size_t step_idx = t.segs.size();
      const double step_t0 = now;
      t.segs.push_back(SegmentRecord{now, now, s, 0, Op::step, 0});
      for (int l = 0; l < kLayers; ++l) {
        for (int o = 0; o < kOpsPerLayer; ++o) {
          const Op op = static_cast<Op>(o);
          if (op_is_collective(op))
            push(s, l, op, 30e-6 + jitter(rng));
          else if (with_compute)
            push(s, l, op, 10e-6 + jitter(rng));
          else
            now += 10e-6;
        }
      }
      now += 200e-6;  // host gap between steps
      t.segs[step_idx].t1 = now;
      t.segs[step_idx].t0 = step_t0;
    }
  }
  in.step_flops = 1e9, in.step_bytes = 1e9, in.tokens_per_step = 8;
  in.peak_flops = 1e15, in.peak_bw = 3e12;
  return in;
}

void BM_AnalyzeCollectives1M(benchmark::State& state) {
  const AnalysisInput in = make_input(state.range(0) != 0);
  for (auto _ : state) {
    PointAnalysis pa = analyze(in);
    benchmark::DoNotOptimize(pa);
  }
  state.counters["collective_records"] = kRanks * kStepsFor1M * 2.0 * kLayers;
}
BENCHMARK(BM_AnalyzeCollectives1M)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("with_compute")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpb
