// Start-up probe of a CPU rank's peaks: read bandwidth (sdot), axpy bandwidth and sgemm
// FLOP/s, each best-of-N on data far larger than the LLC, so MBU is judged against what
// DRAM can really deliver to one rank while its peers run the same probe.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "layers/cpu/cpu_device.h"

namespace tpb {

namespace {}  // namespace

ProbeResult run_cpu_probe(double llc_bytes) {
  ProbeResult r;
  // 4x the LLC per array keeps the probe out of cache; the cap keeps start-up short.
  const std::size_t n =
      static_cast<std::size_t>(std::clamp(4.0 * llc_bytes, 64e6, 512e6) / sizeof(float));
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  volatile float sink = 0;
  const double t_dot = best_seconds(
      5, [&] { sink = sink + cblas_sdot(static_cast<int>(n), x.data(), 1, y.data(), 1); });
  r.read_bw = 2.0 * n * sizeof(float) / t_dot;
  const double t_axpy =
      best_seconds(5, [&] { cblas_saxpy(static_cast<int>(n), 1e-7f, x.data(), 1, y.data(), 1); });
  r.axpy_bw = 3.0 * n * sizeof(float) / t_axpy;

  const int m = 1024;
  std::vector<float> a(m * m, 0.5f), b(m * m, 0.25f), c(m * m, 0.0f);
  const double t_gemm = best_seconds(4, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, m, 1.0f, a.data(), m, b.data(), m,
                0.0f, c.data(), m);
  });
  r.gemm_flops = 2.0 * m * m * static_cast<double>(m) / t_gemm;
  return r;
}

}  // namespace tpb
