// The start-up probe (layers/cpu/cpu_probe.cc) against simple reference loops in the same run,
// on the same array sizes: plain dot, axpy and STREAM-triad loops for bandwidth, and a plain
// dot-product GEMM loop for FLOP/s. Bandwidth ratios near 1 say the probe's peak is what a
// rank can really stream (neither cache-inflated nor BLAS-crippled); the GEMM ratio says how
// far the BLAS peak is above code that does not block for cache or registers.
// Counters: GB/s, GFLOP/s and probe/reference ratios; the median row is the one to read.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "layers/cpu/cpu_device.h"

namespace tpb {
namespace {

// Eight accumulators break the add dependency chain, so the loop is limited by memory, not
// by FP-add latency; the compiler vectorises each lane group without -ffast-math.
float ref_dot(const float* x, const float* y, std::size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) acc[l] += x[i + l] * y[i + l];
  float s = 0;
  for (; i < n; ++i) s += x[i] * y[i];
  for (float a : acc) s += a;
  return s;
}

// y = x * w^T, x [m, k], w [n, k]: the layout of the probe's (and every layer's) GEMM.
void ref_gemm(const float* x, const float* w, float* y, int m, int n, int k) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      y[static_cast<std::size_t>(i) * n + j] =
          ref_dot(x + static_cast<std::size_t>(i) * k, w + static_cast<std::size_t>(j) * k, k);
}

void BM_ProbeVsReference(benchmark::State& state) {
  const CpuDevice dev{DeviceOptions{}};
  const double llc = dev.caps().llc_bytes;
  // The probe's own sizing (cpu_probe.cc): 4x the LLC per array, clamped to [64, 512] MB.
  const std::size_t n =
      static_cast<std::size_t>(std::clamp(4.0 * llc, 64e6, 512e6) / sizeof(float));
  const int m = 1024;
  std::vector<float> x(n, 1.0f), y(n, 2.0f), z(n, 0.0f);
  std::vector<float> a(static_cast<std::size_t>(m) * m, 0.5f), b(a.size(), 0.25f), c(a.size());
  ProbeResult probe;
  double ref_read = 0, ref_axpy = 0, ref_triad = 0, ref_flops = 0;
  volatile float sink = 0;
  for (auto _ : state) {
    probe = run_cpu_probe(llc);
    const double bytes = static_cast<double>(n) * sizeof(float);
    ref_read = 2 * bytes / best_seconds(5, [&] { sink = sink + ref_dot(x.data(), y.data(), n); });
    ref_axpy = 3 * bytes / best_seconds(5, [&] {
                 for (std::size_t i = 0; i < n; ++i) y[i] += 1e-7f * x[i];
                 benchmark::ClobberMemory();
               });
    ref_triad = 3 * bytes / best_seconds(5, [&] {
                  for (std::size_t i = 0; i < n; ++i) z[i] = x[i] + 0.5f * y[i];
                  benchmark::ClobberMemory();
                });
    ref_flops = 2.0 * m * m * static_cast<double>(m) /
                best_seconds(2, [&] { ref_gemm(a.data(), b.data(), c.data(), m, m, m); });
    benchmark::DoNotOptimize(c.data());
  }
  const double ref_bw = std::max({ref_read, ref_axpy, ref_triad});
  state.counters["probe_read_GBps"] = probe.read_bw * 1e-9;
  state.counters["probe_axpy_GBps"] = probe.axpy_bw * 1e-9;
  state.counters["ref_read_GBps"] = ref_read * 1e-9;
  state.counters["ref_axpy_GBps"] = ref_axpy * 1e-9;
  state.counters["ref_triad_GBps"] = ref_triad * 1e-9;
  state.counters["bw_ratio"] = probe.bw() / ref_bw;  // probe peak / best reference loop
  state.counters["probe_gemm_GFLOPs"] = probe.gemm_flops * 1e-9;
  state.counters["ref_gemm_GFLOPs"] = ref_flops * 1e-9;
  state.counters["gemm_ratio"] = probe.gemm_flops / ref_flops;
  state.counters["array_MB"] = static_cast<double>(n) * sizeof(float) * 1e-6;
}
BENCHMARK(BM_ProbeVsReference)
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace tpb
