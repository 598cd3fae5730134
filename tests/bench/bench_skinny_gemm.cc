// skinny_gemm (layers/cpu/skinny_gemm.cc) against OpenBLAS cblas_sgemm, side by side in one
// run, on tiny's four TP-sharded GEMMs (TP 1 and 2) at decode's token counts m = 1..32.
// Each benchmark times both on the same buffers, alternating walks, and keeps each one's
// fastest walk: best-of, as the probe and calibrate time theirs, so that a walk slowed by
// another process on the core does not count against the kernel. W is cycled through
// enough copies to exceed 4x the LLC, as a step reads every layer's own weights (the rule
// of harness/measure/calibrate.cc). FLOPs and bytes come from the cost
// model, and roofline_frac is max(bytes / probe bandwidth, FLOPs / probe sgemm) over the time,
// with the start-up probe (layers/cpu/cpu_probe.cc) run before the benchmarks.
// skinny is what cpu_gemm calls (the AVX-512 path where the CPU has it); generic is the 8-lane
// path that the AVX-512 one replaced there. Like tpbench, the benchmark first puts OpenBLAS on
// its proper core where it would fall back to an old one (layers/cpu/blas_core.h).
// Counters: GB/s and GFLOP/s of each, speedup = BLAS time / skinny time, wide_speedup =
// generic time / skinny time.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <string>
#include <vector>

#include "layers/cost_model.h"
#include "layers/cpu/blas_core.h"
#include "layers/cpu/cpu_device.h"
#include "layers/cpu/skinny_gemm.h"
#include "layers/model_shape.h"

namespace tpb {
namespace {

struct Case {
  Op op;
  const char* name;
  int tp;
  int64_t m, n, k;
  OpCost cost;  // per call
};

std::vector<Case> tiny_cases() {
  const ModelShape shape = load_model("tiny", TPB_SOURCE_DIR "/configs");
  std::vector<Case> out;
  for (int tp : {1, 2})
    for (int64_t m : {1, 2, 4, 8, 16, 32}) {
      const ShardShape sh = shard_shape(shape, tp);
      const int64_t d = shape.head_dim, h = shape.hidden;
      CostQuery q;  // m tokens of one sequence, so the GEMMs see exactly m rows (as calibrate)
      q.shape = shape;
      q.phase = Phase::prefill;
      q.batch = 1;
      q.prompt = m;
      q.tp = tp;
      const Case cs[] = {{Op::qkv_proj, "qkv_proj", tp, m, (sh.q_heads + 2 * sh.kv_heads) * d, h},
                         {Op::o_proj, "o_proj", tp, m, h, sh.q_heads * d},
                         {Op::gate_up_proj, "gate_up_proj", tp, m, 2 * sh.inter, h},
                         {Op::down_proj, "down_proj", tp, m, h, sh.inter}};
      for (Case c : cs) {
        c.cost = op_cost(q, c.op);
        out.push_back(c);
      }
    }
  return out;
}

void blas_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
               std::vector<float>&) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(k), 0.0f, y,
              static_cast<int>(n));
}

void BM_SkinnyVsBlas(benchmark::State& state, const Case& c, const ProbeResult& probe, double llc) {
  const std::size_t w_floats = static_cast<std::size_t>(c.n * c.k);
  const int copies = static_cast<int>(
      std::clamp(4.0 * llc / static_cast<double>(w_floats * sizeof(float)), 1.0, 64.0) + 0.999);
  std::vector<float> x(c.m * c.k), w(w_floats * copies), y(c.m * c.n);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 97);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.001f * static_cast<float>(i % 251);
  using Gemm =
      void (*)(const float*, const float*, float*, int64_t, int64_t, int64_t, std::vector<float>&);
  std::vector<float> scratch;
  auto per_call = [&](Gemm g) {  // seconds per GEMM over one walk through every copy
    const double s = best_seconds(1, [&] {
      for (int i = 0; i < copies; ++i)
        g(x.data(), w.data() + i * w_floats, y.data(), c.m, c.n, c.k, scratch);
      benchmark::ClobberMemory();
    });
    return s / copies;
  };
  double s = 1e30, g = 1e30, b = 1e30;
  for (auto _ : state) {
    for (int rep = 0; rep < 5; ++rep) {
      s = std::min(s, per_call(skinny_gemm));
      g = std::min(g, per_call(skinny_gemm_generic));
      b = std::min(b, per_call(blas_gemm));
    }
    state.SetIterationTime(s);
  }
  const double bytes = c.cost.bytes_read + c.cost.bytes_written, flops = c.cost.flops;
  const double roof = std::max(bytes / probe.bw(), flops / probe.gemm_flops);
  state.counters["skinny_GBps"] = bytes / s * 1e-9;
  state.counters["skinny_GFLOPs"] = flops / s * 1e-9;
  state.counters["generic_GFLOPs"] = flops / g * 1e-9;
  state.counters["wide_speedup"] = g / s;
  state.counters["blas_GBps"] = bytes / b * 1e-9;
  state.counters["blas_GFLOPs"] = flops / b * 1e-9;
  state.counters["speedup"] = b / s;
  state.counters["roofline_frac"] = roof / s;
  state.counters["blas_roofline_frac"] = roof / b;
}

}  // namespace
}  // namespace tpb

int main(int argc, char** argv) {
  tpb::reexec_with_blas_core(argv);  // before anything has run: the exec starts afresh
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const tpb::CpuDevice dev{tpb::DeviceOptions{}};
  const double llc = dev.caps().llc_bytes;
  // The best of three probes, figure by figure: another process on the core can only slow a
  // probe, and a low peak would flatter every roofline_frac.
  tpb::ProbeResult probe;
  for (int i = 0; i < 3; ++i) {
    const tpb::ProbeResult p = tpb::run_cpu_probe(llc);
    probe.read_bw = std::max(probe.read_bw, p.read_bw);
    probe.axpy_bw = std::max(probe.axpy_bw, p.axpy_bw);
    probe.gemm_flops = std::max(probe.gemm_flops, p.gemm_flops);
  }
  benchmark::AddCustomContext("probe_bw_GBps", std::to_string(probe.bw() * 1e-9));
  benchmark::AddCustomContext("probe_sgemm_GFLOPs", std::to_string(probe.gemm_flops * 1e-9));
  benchmark::AddCustomContext("openblas_core", openblas_get_corename());
  benchmark::AddCustomContext("skinny_path", tpb::skinny_gemm_has_avx512() ? "avx512" : "generic");
  for (const tpb::Case& c : tpb::tiny_cases()) {
    const std::string name = std::string("BM_SkinnyVsBlas/") + c.name +
                             "/tp:" + std::to_string(c.tp) + "/m:" + std::to_string(c.m);
    benchmark::RegisterBenchmark(name.c_str(), tpb::BM_SkinnyVsBlas, c, probe, llc)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
