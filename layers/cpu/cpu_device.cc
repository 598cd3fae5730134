// CPU backend ops (fp32). GEMMs go to BLAS; the elementwise ops are plain loops that the
// compiler vectorises; attention lives in cpu_attention.cc.
#include "layers/cpu/cpu_device.h"

#include <cblas.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <tuple>
#include <utility>

#include "base/errors.h"
#include "layers/cpu/blas_core.h"
#include "layers/cpu/target_clones.h"

namespace tpb {

void cpu_require_fp32(DType t) {
  if (t != DType::fp32)
    throw BadInput(std::string("--dtype: the cpu backend supports fp32 only (got ") +
                   dtype_name(t) + ")");
}

namespace {

// The cpu backend's buffers hold fp32 (cpu_require_fp32 guards every op that takes them).
const float* f32(const void* p) {
  return static_cast<const float*>(p);
}
float* f32(void* p) {
  return static_cast<float*>(p);
}

// One row of hashed values (layers/fill_hash.h). Weights, caches and calibrate's 512 MB stream
// arrays are filled this way, and scalar hashing was a third of `calibrate`'s time; the AVX-512
// twin vectorises the 64-bit multiplies (vpmullq). Both give the same bits: the hash is integer
// arithmetic, and its float formula is exact up to the last multiply, so contraction into an
// FMA cannot change a value.
void fill_row_generic(float* d, uint64_t seed, uint64_t index0, int64_t n, float scale) {
  for (int64_t j = 0; j < n; ++j)
    d[j] = hashed_value(seed, index0 + static_cast<uint64_t>(j), scale);
}

#if defined(TPB_HAVE_V4)
TPB_TARGET_V4 void fill_row_avx512(float* d, uint64_t seed, uint64_t index0, int64_t n,
                                   float scale) {
  for (int64_t j = 0; j < n; ++j)
    d[j] = hashed_value(seed, index0 + static_cast<uint64_t>(j), scale);
}
#endif

double mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024.0;
  return 0;
}

// The last-level cache and where its size came from. sysfs reports the L3 slice this CPU
// really shares; where /sys is absent (a bare chroot or container root) glibc's sysconf reads
// CPUID, which may report a sum over slices. Unknown stays 0, never a guess.
std::pair<double, std::string> llc_bytes() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string s;
  if (f >> s && !s.empty()) {
    double v = std::strtod(s.c_str(), nullptr);
    if (s.back() == 'K') v *= 1024;
    if (s.back() == 'M') v *= 1024 * 1024;
    if (v > 0) return {v, "sysfs cpu0/cache/index3"};
  }
  if (long v = sysconf(_SC_LEVEL3_CACHE_SIZE); v > 0)
    return {static_cast<double>(v), "sysconf L3 (glibc, from CPUID)"};
  if (long v = sysconf(_SC_LEVEL2_CACHE_SIZE); v > 0)
    return {static_cast<double>(v), "sysconf L2 (glibc, from CPUID; no L3 reported)"};
  return {0, "unknown (no sysfs cache entry, sysconf reports none)"};
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "cpu";
}

}  // namespace

CpuDevice::CpuDevice(const DeviceOptions& o) {
  openblas_set_num_threads(o.blas_threads > 0 ? o.blas_threads : 1);
  caps_.backend = "cpu";
  caps_.name = cpu_model();
  caps_.dtypes = {DType::fp32};
  caps_.device_timer = false;
  caps_.host_compute = true;
  caps_.per_op_times = "host clock";
  caps_.startup_probe = true;  // the BLAS probe in cpu_probe.h
  caps_.host_ranks = o.local_size;
  // Ranks on one host share its memory; each gets an equal part unless a budget is given.
  caps_.memory_bytes = o.memory_budget_bytes > 0
                           ? o.memory_budget_bytes
                           : mem_available_bytes() / std::max(1, o.local_size);
  std::tie(caps_.llc_bytes, caps_.llc_source) = llc_bytes();
  // Where OpenBLAS runs an old core's kernels, its sgemm (the probe's GEMM peak) understates the
  // core and every MFU and roofline fraction reads high: blas_core.h says which core runs, and
  // whether tpbench chose it.
  if (auto w = blas_core_warning(); !w.empty()) caps_.warnings.push_back(w);
  // steady_clock resolution as observed: smallest nonzero step between back-to-back reads.
  int64_t best = 1'000'000;
  for (int i = 0; i < 1000; ++i) {
    int64_t a = steady_now_ns(), b = steady_now_ns();
    while (b == a) b = steady_now_ns();
    best = std::min(best, b - a);
  }
  caps_.timer_resolution_s = static_cast<double>(best) * 1e-9;
}

// Each block carries its size in a 64-byte header (alignment is kept), so free_raw can
// return it to the budget: a device reused across sweep points would otherwise run out of
// budget after a few points.
constexpr std::size_t kAllocHeader = 64;

DeviceBuffer CpuDevice::alloc(std::size_t bytes) {
  if (allocated_ + static_cast<double>(bytes) > caps_.memory_bytes)
    throw DeviceOom("cpu alloc of " + std::to_string(bytes) + " B exceeds the rank's budget");
  char* base = static_cast<char*>(std::aligned_alloc(64, kAllocHeader + (bytes + 63) / 64 * 64));
  if (!base) throw DeviceOom("cpu alloc of " + std::to_string(bytes) + " B failed");
  std::memcpy(base, &bytes, sizeof(bytes));
  allocated_ += static_cast<double>(bytes);
  return DeviceBuffer(this, base + kAllocHeader, bytes);
}

void CpuDevice::free_raw(void* p) noexcept {
  if (!p) return;
  char* base = static_cast<char*>(p) - kAllocHeader;
  std::size_t bytes = 0;
  std::memcpy(&bytes, base, sizeof(bytes));
  allocated_ -= static_cast<double>(bytes);
  std::free(base);
}

void CpuDevice::upload(void* dst, const float* src, std::size_t count, DType t) {
  cpu_require_fp32(t);
  std::memcpy(dst, src, count * sizeof(float));
}

void CpuDevice::download(float* dst, const void* src, std::size_t count, DType t) {
  cpu_require_fp32(t);
  std::memcpy(dst, src, count * sizeof(float));
}

void CpuDevice::fill(void* dst, DType t, const FillSpec& f) {
  cpu_require_fp32(t);
  float* d = f32(dst) + f.dst_offset;
  auto row = &fill_row_generic;
#if defined(TPB_HAVE_V4)
  if (cpu_has_x86_64_v4()) row = &fill_row_avx512;
#endif
  for (int64_t i = 0; i < f.rows; ++i)
    row(d + i * f.dst_ld, f.seed, static_cast<uint64_t>((f.row0 + i) * f.full_cols + f.col0),
        f.cols, f.scale);
}

void CpuDevice::gemm(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
                     DType t) {
  cpu_require_fp32(t);
  cpu_gemm(f32(x), f32(w), f32(y), m, n, k, gemm_scratch_);
}

void CpuDevice::rmsnorm(const void* x, const void* gamma, void* y, int64_t rows, int64_t dim,
                        float eps, DType t) {
  cpu_require_fp32(t);
  const float* xs = f32(x);
  const float* g = f32(gamma);
  float* ys = f32(y);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xs + r * dim;
    float ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    float* yr = ys + r * dim;
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * inv * g[i];
  }
}

void CpuDevice::rope(void* qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
                     const AttnShape& s, float theta, DType t) {
  cpu_require_fp32(t);
  const int64_t d = s.head_dim, half = d / 2;
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * d;
  float* base = f32(qkv);
  for (int64_t tok = 0; tok < tokens; ++tok) {
    const double pos = static_cast<double>(pos0 + tok % tokens_per_seq);
    float* r = base + tok * row;
    // q heads then k heads are contiguous at the start of the row; v is not rotated.
    for (int64_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(static_cast<double>(theta), -2.0 * i / d);
      const float c = static_cast<float>(std::cos(pos * inv_freq));
      const float sn = static_cast<float>(std::sin(pos * inv_freq));
      for (int64_t h = 0; h < s.q_heads + s.kv_heads; ++h) {
        float* v = r + h * d;
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * c - x1 * sn;
        v[i + half] = x0 * sn + x1 * c;
      }
    }
  }
}

void CpuDevice::kv_write(const void* qkv, void* k_cache, void* v_cache, int64_t tokens_per_seq,
                         int64_t pos0, const AttnShape& s, DType t) {
  cpu_require_fp32(t);
  const int64_t d = s.head_dim, kvw = s.kv_heads * d;
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * d;
  const float* src = f32(qkv);
  float* kc = f32(k_cache);
  float* vc = f32(v_cache);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t tk = 0; tk < tokens_per_seq; ++tk) {
      const float* r = src + (b * tokens_per_seq + tk) * row;
      const int64_t at = (b * s.max_ctx + pos0 + tk) * kvw;
      std::memcpy(kc + at, r + s.q_heads * d, kvw * sizeof(float));
      std::memcpy(vc + at, r + (s.q_heads + s.kv_heads) * d, kvw * sizeof(float));
    }
}

void CpuDevice::attention_decode(const void* qkv, const void* k_cache, const void* v_cache,
                                 void* out, int64_t ctx_len, const AttnShape& s, DType t) {
  cpu_require_fp32(t);
  cpu_attention_decode(f32(qkv), f32(k_cache), f32(v_cache), f32(out), ctx_len, s, scratch_);
}

void CpuDevice::attention_prefill(const void* qkv, const void* k_cache, const void* v_cache,
                                  void* out, int64_t seq, const AttnShape& s, DType t) {
  cpu_require_fp32(t);
  cpu_attention_prefill(f32(qkv), f32(k_cache), f32(v_cache), f32(out), seq, s, scratch_);
}

void CpuDevice::swiglu(const void* gate_up, void* out, int64_t rows, int64_t inter, DType t) {
  cpu_require_fp32(t);
  cpu_swiglu(f32(gate_up), f32(out), rows, inter);
}

void CpuDevice::add(void* x, const void* y, std::size_t count, DType t) {
  cpu_require_fp32(t);
  float* a = f32(x);
  const float* b = f32(y);
  for (std::size_t i = 0; i < count; ++i) a[i] += b[i];
}

void CpuDevice::busy_work(double seconds) {
  // A spin on the clock keeps the core as busy as compute would; a sleep would free it and
  // let an oversubscribed peer run, which is not what a slow rank looks like.
  const int64_t until = steady_now_ns() + static_cast<int64_t>(seconds * 1e9);
  volatile double sink = 1.0;
  while (steady_now_ns() < until)
    for (int i = 0; i < 64; ++i) sink = sink * 1.0000001 + 1e-9;
}

void CpuDevice::mark(std::size_t slot) {
  marks_[slot] = steady_now_ns();
}

void CpuDevice::collect_marks(std::size_t first, std::size_t count, int64_t* host_ns) {
  std::memcpy(host_ns, marks_.data() + first, count * sizeof(int64_t));
}

}  // namespace tpb
