// FP8 GEMM check: e4m3 bytes decoded on the host with cuda_fp8.h's own conversions, so the
// reference sees what the tensor cores multiply; fp32 fast accumulation and the bf16 output
// are what the tolerance covers.
#include "tests/gpu/fp8_check.h"

#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/cuda_check.h"
#include "layers/cuda/plan/launch_plan.h"
#include "layers/reference/max_error.h"

namespace tpb {
namespace {

// Normalised max error allowed: bf16 output rounding (2^-9) and the FP8 tensor cores' fast
// accumulation, whose partial sums keep fewer bits than fp32 over long k.
constexpr double kFp8Tolerance = 2e-2;
constexpr int kSampledCols = 256;  // reference columns per shape (the host sum is m * k each)
constexpr int kTimedCalls = 20;

struct Shape {
  const char* name;
  int64_t n, k;
};
constexpr Shape kShapes[] = {{"qkv_proj", 6144, 4096},
                             {"o_proj", 4096, 4096},
                             {"gate_up_proj", 28672, 4096},
                             {"down_proj", 4096, 14336}};

float e4m3_to_float(uint8_t b) {
  __nv_fp8_e4m3 v;
  v.__x = b;
  return static_cast<float>(v);
}

// x quantised as fp8_quant_kernel does: scale = max|x| / 448, each value times 1 / scale,
// rounded to e4m3 with saturation; returns the scale.
float quantise(const std::vector<float>& x, std::vector<float>& q) {
  float amax = 0.f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float scale = amax > 0.f ? amax / kFp8E4m3Max : 1.f, inv = 1.f / scale;
  q.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    q[i] = e4m3_to_float(__nv_cvt_float_to_fp8(x[i] * inv, __NV_SATFINITE, __NV_E4M3));
  return scale;
}

// max |y - ref| / max |ref| over kSampledCols columns of every row; counts the weight bytes in
// those columns that differ from the fill's.
double fp8_error(CudaDevice& dev, const DeviceBuffer& x, const DeviceBuffer& w, const FillSpec& wf,
                 const DeviceBuffer& y, int64_t m, const Shape& s, int64_t* fill_mismatches) {
  const float w_scale = fp8_fill_scale(wf);
  std::vector<float> hx(static_cast<std::size_t>(m * s.k)), hq,
      hy(static_cast<std::size_t>(m * s.n));
  dev.download(hx.data(), x.get(), hx.size(), DType::bf16);
  dev.download(hy.data(), y.get(), hy.size(), DType::bf16);
  std::vector<uint8_t> hw(static_cast<std::size_t>(s.n * s.k));
  TPB_CUDA_CHECK(cudaMemcpy(hw.data(), w.get(), hw.size(), cudaMemcpyDeviceToHost));
  const double scale = static_cast<double>(quantise(hx, hq)) * w_scale;
  double err = 0, ref_max = 0;
  for (int64_t c = 0; c < kSampledCols; ++c) {
    const int64_t j = c * s.n / kSampledCols;
    for (int64_t e = 0; e < s.k; ++e)  // the fill, byte for byte: fill_value / its fp8 scale
      *fill_mismatches += hw[j * s.k + e] != __nv_cvt_float_to_fp8(fill_value(wf, j, e) / w_scale,
                                                                   __NV_SATFINITE, __NV_E4M3);
    for (int64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (int64_t e = 0; e < s.k; ++e)
        acc += static_cast<double>(hq[i * s.k + e]) * e4m3_to_float(hw[j * s.k + e]);
      const double want = acc * scale;
      ref_max = std::max(ref_max, std::fabs(want));
      err = ref::worse_error(err, hy[i * s.n + j], want);  // a NaN output: infinite, FAIL
    }
  }
  return ref_max > 0 ? err / ref_max : err;
}

// Median time of one call of f, in us, on the device's stream.
template <class F>
double time_us(CudaDevice& dev, F f) {
  auto* s = static_cast<cudaStream_t>(dev.stream());
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  TPB_CUDA_CHECK(cudaEventCreate(&e0));
  TPB_CUDA_CHECK(cudaEventCreate(&e1));
  f();  // plans made, workspaces grown
  std::vector<double> us;
  for (int r = 0; r < kTimedCalls; ++r) {
    TPB_CUDA_CHECK(cudaEventRecord(e0, s));
    f();
    TPB_CUDA_CHECK(cudaEventRecord(e1, s));
    TPB_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    us.push_back(ms * 1e3);
  }
  TPB_CUDA_CHECK(cudaEventDestroy(e0));
  TPB_CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

int check_shape(CudaDevice& dev, const Shape& s, int64_t m, bool check) {
  const FillSpec wf = whole_tensor_fill(7001, 0.02f, s.n, s.k);
  DeviceBuffer x = dev.alloc(static_cast<std::size_t>(m * s.k) * 2),
               big = dev.alloc(static_cast<std::size_t>(m * s.k) * 2),
               w = dev.alloc(static_cast<std::size_t>(s.n * s.k)),
               w16 = dev.alloc(static_cast<std::size_t>(s.n * s.k) * 2),
               y = dev.alloc(static_cast<std::size_t>(m * s.n) * 2);
  dev.fill(x.get(), DType::bf16, whole_tensor_fill(7002, 1.0f, m, s.k));
  dev.fill(big.get(), DType::bf16, whole_tensor_fill(7003, 1000.0f, m, s.k));
  dev.fill(w.get(), DType::fp8, wf);
  dev.fill(w16.get(), DType::bf16, wf);
  const float ws = fp8_fill_scale(wf);
  double err = -1;
  int64_t fill_bad = 0;
  if (check) {
    dev.gemm_fp8(big.get(), w.get(), ws, y.get(), m, s.n, s.k, DType::bf16);
    dev.gemm_fp8(x.get(), w.get(), ws, y.get(), m, s.n, s.k, DType::bf16);
    dev.synchronize();
    err = fp8_error(dev, x, w, wf, y, m, s, &fill_bad);
  }
  const double t8 =
      time_us(dev, [&] { dev.gemm_fp8(x.get(), w.get(), ws, y.get(), m, s.n, s.k, DType::bf16); });
  const double t16 =
      time_us(dev, [&] { dev.gemm(x.get(), w16.get(), y.get(), m, s.n, s.k, DType::bf16); });
  const bool ok = !check || (err <= kFp8Tolerance && fill_bad == 0);
  const double gbs = (static_cast<double>(s.n) * s.k + 2.0 * m * s.k + 2.0 * m * s.n) / (t8 * 1e3);
  char verdict[96] = "(timed only)";
  if (check)
    std::snprintf(verdict, sizeof(verdict), "%s err %.2e, fill %lld bad", ok ? "ok" : "FAIL", err,
                  static_cast<long long>(fill_bad));
  std::printf(
      "  %-12s m=%-4lld n=%-5lld k=%-5lld %s; fp8 %8.1f us (%6.0f GB/s), bf16 %8.1f us, "
      "bf16/fp8 %.2fx\n",
      s.name, static_cast<long long>(m), static_cast<long long>(s.n), static_cast<long long>(s.k),
      verdict, t8, gbs, t16, t16 / t8);
  return ok ? 0 : 1;
}

}  // namespace

int check_fp8_gemm(CudaDevice& dev, bool quick) {
  std::printf(
      "\n[5] FP8 GEMMs (e4m3 weights and per-tensor dynamic input scale, cuBLASLt, fast "
      "accumulation; tolerance %.0e of max |ref| over %d sampled columns)\n",
      kFp8Tolerance, kSampledCols);
  if (!dev.caps().fp8_gemm) {
    std::printf("  SKIP: %s has no FP8 tensor cores (compute capability below 8.9)\n",
                dev.caps().name.c_str());
    return 0;
  }
  int failures = 0;
  const std::vector<int64_t> ms =
      quick ? std::vector<int64_t>{1, 16} : std::vector<int64_t>{1, 16, 64, 512};
  for (const Shape& s : kShapes)
    for (int64_t m : ms) failures += check_shape(dev, s, m, m <= 16);
  return failures;
}

}  // namespace tpb
