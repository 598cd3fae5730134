// Start-up probe of a CPU rank's peaks: read bandwidth (sdot, and the decode GEMM's own
// four-stream read), axpy bandwidth and sgemm FLOP/s, each best-of-N on data far larger than
// the LLC, so MBU is judged against what DRAM can really deliver to one rank while its peers
// run the same probe.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "layers/cpu/cpu_device.h"
#include "layers/cpu/skinny_gemm.h"

namespace tpb {

namespace {

// The streaming kernel itself as a probe: y = x W^T at one token reads W once, as four
// sequential streams (skinny_gemm.cc), which one core reads faster than sdot's two.
double stream_read_bw(std::size_t floats) {
  constexpr int64_t k = 4096;
  const int64_t n = std::max<int64_t>(4, static_cast<int64_t>(floats) / k / 4 * 4);
  std::vector<float> w(static_cast<std::size_t>(n * k), 0.5f), x(k, 1.0f), y(n, 0.0f);
  std::vector<float> scratch;
  skinny_gemm(x.data(), w.data(), y.data(), 1, n, k, scratch);  // sizes the scratch
  const double t =
      best_seconds(5, [&] { skinny_gemm(x.data(), w.data(), y.data(), 1, n, k, scratch); });
  return static_cast<double>(n) * k * sizeof(float) / t;
}

}  // namespace

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
  std::vector<float>().swap(x);  // free sdot's arrays before the stream probe's own
  std::vector<float>().swap(y);
  r.stream_bw = stream_read_bw(2 * n);  // as many bytes as sdot's two arrays

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
