// GPU device check (no MPI): per-op correctness of the CUDA backend against a host fp32
// reference, the mark()/busy_work() clocks, then decode and prefill roofline numbers of a
// Llama-3.1-8B-shaped layer stack at TP=1. Every layer has the same shapes and cost, so a few
// layers give the per-layer MBU/MFU of the full 32. Exit 0 pass, 1 fail, 77 no GPU (skipped).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/cuda/cuda_device.h"
#include "layers/cuda/plan/launch_plan.h"
#include "tests/gpu/check_sections.h"
#include "tests/gpu/fp8_check.h"
#include "tests/gpu/layer_check.h"
#include "tests/gpu/layer_stack.h"
#include "tests/gpu/varlen_check.h"

namespace tpb {
namespace {

// H200 SXM datasheet, dense bf16 (BRIEF.md reference numbers).
constexpr double kPeakBw = 4.8e12, kPeakFlops = 989e12;
constexpr CheckShape kSmall{"small-d64", 512, 8, 2, 64, 1024};
constexpr CheckShape kSmall128{"small-d128-g8", 1024, 8, 1, 128, 2048};
// Group 2 < 4 KV heads: prefill's GEMMs batch one head of each group (K/V stride d).
constexpr CheckShape kSmallG2{"small-d64-g2", 512, 8, 4, 64, 1024};
constexpr CheckShape kLlama8b{"llama-3.1-8b", 4096, 32, 8, 128, 14336};

int64_t host_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void print_row(const char* phase, int64_t batch, int64_t n, int layers, double step_s,
               double stamped_s) {
  LayerDims d;
  d.prefill = std::strcmp(phase, "prefill") == 0;
  d.batch = batch;
  d.tokens_per_seq = d.prefill ? n : 1;
  d.ctx_len = d.prefill ? n : n + 1;
  d.hidden = kLlama8b.hidden;
  d.q_heads = kLlama8b.q_heads;
  d.kv_heads = kLlama8b.kv_heads;
  d.head_dim = kLlama8b.head_dim;
  d.inter = kLlama8b.inter;
  d.dtype = DType::bf16;
  // Launch plan totals equal the cost model's step_cost (tests/unit/test_launch_plan.cc).
  const PlanTotals p = plan_totals(layer_launch_plan(d));
  const double flops = p.flops * layers, bytes = (p.bytes_read + p.bytes_written) * layers;
  const double intensity = flops / bytes, ridge = kPeakFlops / kPeakBw;
  const double tokens = static_cast<double>(batch * d.tokens_per_seq);
  std::printf("  %-7s %5lld %6lld %9.3f %11.0f %6.3f %7.4f %7.4f %9.1f %8.1f %10.3f\n", phase,
              static_cast<long long>(batch), static_cast<long long>(n), step_s * 1e3,
              tokens / step_s, bytes / (step_s * kPeakBw), flops / (step_s * kPeakFlops),
              std::min(1.0, intensity / ridge), intensity, bytes / step_s * 1e-9, stamped_s * 1e3);
}

struct Case {
  CheckShape s;
  bool prefill;
  int64_t batch, n;
  DType t;
};

// Each case against the host reference, a section of its own: a case that throws (a graph
// cuDNN refuses, a CUDA error) is that case's FAIL, and the next case runs.
void check_cases(CudaDevice& dev, const std::vector<Case>& cases, const char* section,
                 CheckSections& sections) {
  for (const Case& k : cases) {
    char name[160];
    std::snprintf(name, sizeof name, "%s %s %s B=%lld %s=%lld %s", section, k.s.name,
                  k.prefill ? "prefill" : "decode", static_cast<long long>(k.batch),
                  k.prefill ? "S" : "context", static_cast<long long>(k.n), dtype_name(k.t));
    std::printf("  %s\n", name + std::strlen(section) + 1);
    sections.run(name, [&] { return check_layer(dev, k.s, k.prefill, k.batch, k.n, k.t); });
  }
}

// Serve's mixed step of shape `s` (varlen_check.h), a section of its own. Under --attention
// cudnn, a step that ran the native kernels because cuDNN refused its paged graph is a FAIL:
// cuDNN's paged attention went unchecked.
void check_mixed(CudaDevice& dev, const CheckShape& s, DType t, const char* section,
                 CheckSections& sections) {
  std::printf("  %s mixed step (%s) %s\n", s.name,
              dev.cudnn_attention(t) ? "cuDNN paged, ragged" : "varlen, paged KV", dtype_name(t));
  sections.run(std::string(section) + " " + s.name + " mixed step " + dtype_name(t), [&] {
    const int64_t native_before = dev.cudnn_paged_use().native_calls;
    int failed = check_varlen(dev, s, t);
    const CudaDevice::PagedAttentionUse use = dev.cudnn_paged_use();
    if (dev.cudnn_attention(t) && use.native_calls > native_before) {
      std::printf("  FAIL: cuDNN refused the paged graph, so %lld step(s) above ran natively: %s\n",
                  static_cast<long long>(use.native_calls - native_before), use.refused.c_str());
      ++failed;
    }
    return failed;
  });
}

// The 8B step with native attention and with cuDNN's, side by side (decode B=1 ctx 1024,
// prefill S=4096, or 512 under --quick).
int cudnn_side_by_side(CudaDevice& native, CudaDevice& cudnn, bool quick) {
  const int layers = quick ? 2 : 4;
  const int64_t prompt = quick ? 512 : 4096;
  std::printf("  %s x %d layers, bf16, TP=1, p50 step ms: %-9s %-9s %s\n", kLlama8b.name, layers,
              "native", "cudnn", "cudnn/native");
  Stack a(native, kLlama8b, layers, DType::bf16, prompt),
      b(cudnn, kLlama8b, layers, DType::bf16, prompt);
  a.caches(1, std::max<int64_t>(prompt, 1025));
  b.caches(1, std::max<int64_t>(prompt, 1025));
  for (const auto& [prefill, n] : {std::pair{false, int64_t{1024}}, std::pair{true, prompt}}) {
    const double tn = time_steps(native, a, prefill, 1, n, prefill ? 3 : 20);
    const double tc = time_steps(cudnn, b, prefill, 1, n, prefill ? 3 : 20);
    std::printf("    %-7s %s=%-5lld %9.3f %9.3f %6.3f\n", prefill ? "prefill" : "decode",
                prefill ? "S" : "ctx", static_cast<long long>(n), tn * 1e3, tc * 1e3, tc / tn);
  }
  return 0;
}

// --attention cudnn on a second device of the same GPU: the layer's ops against the host
// reference with cuDNN's fused attention (bf16 and fp16: fp32 keeps the native kernels, checked
// above), then the 8B step side by side with the native attention (decode B=1, prefill S=4096).
// A build without cudnn-frontend, or a machine without cuDNN 9, fails here with the reason.
void check_cudnn_attention(CudaDevice& native, bool quick, CheckSections& sections) {
  std::printf("\n[4] --attention cudnn (cuDNN's fused SDPA)\n");
  std::unique_ptr<CudaDevice> dev;
  if (sections.run("[4] the cudnn device", [&] {
        DeviceOptions o;
        o.backend = "cuda";
        o.attention = "cudnn";
        dev = std::make_unique<CudaDevice>(o, 0);
        std::printf("  %s\n", dev->kernel_choices().front().c_str());
        return 0;
      }))
    return;  // no cuDNN: nothing below can run
  std::vector<Case> cases = {{kSmall128, true, 1, 100, DType::bf16},
                             {kSmall128, false, 2, 700, DType::bf16},
                             {kLlama8b, true, 1, 40, DType::bf16},
                             {kLlama8b, false, 2, 300, DType::bf16}};
  if (!quick) {
    cases.push_back({kSmall, true, 2, 600, DType::bf16});
    cases.push_back({kSmall, false, 3, 45, DType::fp16});
    cases.push_back({kSmallG2, true, 1, 300, DType::fp16});
    cases.push_back({kLlama8b, false, 64, 1024, DType::bf16});
  }
  check_cases(*dev, cases, "[4]", sections);
  // Serve's mixed steps through cuDNN's paged attention: every sequence in one call, decodes
  // beside chunks with a cached part, five sequences in one graph.
  for (const CheckShape& s :
       quick ? std::vector<CheckShape>{kSmall128} : std::vector<CheckShape>{kSmall128, kLlama8b})
    check_mixed(*dev, s, DType::bf16, "[4]", sections);
  sections.run("[4] serve's paged call against run's", [&] {
    std::printf("  one layer's attention, serve's paged call against run's (cuDNN both):\n");
    for (int64_t b : quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 16, 64})
      time_varlen_vs_decode(*dev, kLlama8b, b, 1024);
    return 0;
  });
  sections.run("[4] the 8B step, native against cudnn",
               [&] { return cudnn_side_by_side(native, *dev, quick); });
}

// [1]: mark() stamps fall inside a host bracket, and busy_work(5 ms) lasts 5 ms.
int check_clocks(CudaDevice& dev) {
  std::printf("\n[1] clocks\n");
  dev.reserve_marks(1 << 16);
  const int64_t h0 = host_ns();
  dev.mark(0);
  dev.busy_work(0.005);
  dev.mark(1);
  dev.synchronize();
  const int64_t h1 = host_ns();
  int64_t m[2];
  dev.collect_marks(0, 2, m);
  const double spin_ms = 1e-6 * static_cast<double>(m[1] - m[0]);
  const double slack = dev.mark_uncertainty_s() * 1e9 + 1000;
  const bool inside = m[0] >= h0 - slack && m[1] <= h1 + slack;
  const bool spin_ok = spin_ms > 4.9 && spin_ms < 5.5;
  std::printf("  marks inside the host bracket: %s; busy_work(5 ms) measured %.3f ms: %s\n",
              inside ? "ok" : "FAIL", spin_ms, spin_ok ? "ok" : "FAIL");
  return (inside ? 0 : 1) + (spin_ok ? 0 : 1);
}

// [2]: the fill, every op of a layer and serve's mixed step against the host reference.
void check_correctness(CudaDevice& dev, bool quick, CheckSections& sections) {
  std::printf("\n[2] correctness vs host fp32 reference (normalized max error per op)\n");
  sections.run("[2] fill", [&] {
    int bad_dtypes = 0;
    for (DType t : {DType::fp32, DType::bf16, DType::fp16}) {
      const int64_t bad = check_fill(dev, t);
      bad_dtypes += bad ? 1 : 0;
      std::printf("  fill %s: %lld mismatches (bit-exact vs fill_value)\n", dtype_name(t),
                  static_cast<long long>(bad));
    }
    return bad_dtypes;
  });
  // Decode: context 1000 splits 32 ways (chunk 32); context 20 is one split (no combine);
  // B=300 at context 3000 is 2 splits of 2048 positions (the shared-memory cap), so each block
  // loops 64 times over its double-buffered loads. Prefill: S=600 is 3 query tiles (256, 256,
  // 88 rows), the last shorter than the rest.
  std::vector<Case> cases = {
      {kSmall, false, 3, 45, DType::fp32},   {kSmall, false, 2, 1000, DType::fp32},
      {kSmall, true, 2, 67, DType::fp32},    {kSmall, false, 3, 45, DType::bf16},
      {kSmall, false, 2, 1000, DType::bf16}, {kSmall, true, 2, 67, DType::bf16},
      {kSmall, false, 3, 20, DType::fp32},   {kSmall, true, 2, 600, DType::fp32}};
  if (!quick) {
    cases.push_back({kSmall, true, 2, 600, DType::bf16});
    cases.push_back({kSmall, true, 1, 600, DType::fp16});
    cases.push_back({kSmall, false, 300, 3000, DType::bf16});
    cases.push_back({kSmallG2, true, 2, 300, DType::fp32});
    cases.push_back({kSmallG2, true, 1, 300, DType::bf16});
    cases.push_back({kSmallG2, false, 2, 2000, DType::fp32});
    cases.push_back({kSmall128, true, 1, 700, DType::bf16});
    cases.push_back({kSmall128, false, 2, 5000, DType::fp32});
    cases.push_back({kSmall, false, 2, 1000, DType::fp16});
    cases.push_back({kSmall, true, 2, 67, DType::fp16});
    cases.push_back({kSmall128, false, 2, 700, DType::bf16});
    cases.push_back({kSmall128, true, 1, 100, DType::bf16});
    cases.push_back({kLlama8b, false, 2, 300, DType::bf16});
    cases.push_back({kLlama8b, true, 1, 40, DType::bf16});
  }
  check_cases(dev, cases, "[2]", sections);
  // The mixed step of tpbench serve: ragged decodes beside a chunk with a cached part. The 8B's
  // (head_dim 128, group 4) runs under --quick too: its native paged decode and split kernels
  // are the ones serve runs on the 8B.
  for (const auto& [shape, t] : {std::pair{kSmall, DType::fp32}, std::pair{kSmall, DType::bf16},
                                 std::pair{kLlama8b, DType::bf16}})
    check_mixed(dev, shape, t, "[2]", sections);
}

// [3]: decode and prefill roofline numbers of the 8B's layer stack, per-op device times, the
// GEMM choices, and serve's paged attention against run's.
int roofline(CudaDevice& dev, bool quick) {
  const int layers = quick ? 2 : 4;
  const int64_t context = 1024;
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<int64_t> prompts = {512, 1024, 2048, 4096, 8192};
  if (quick) batches = {1, 8}, prompts = {512};
  std::printf(
      "\n[3] roofline, %s x %d layers (per-layer costs are identical, so MBU/MFU hold "
      "for the full stack), bf16, TP=1, peaks %.1f TB/s and %.0f TFLOP/s (datasheet, "
      "dense)\n",
      kLlama8b.name, layers, kPeakBw * 1e-12, kPeakFlops * 1e-12);
  std::printf("  %-7s %5s %6s %9s %11s %6s %7s %7s %9s %8s %10s\n", "phase", "batch", "ctx/S",
              "step_ms", "tokens/s", "MBU", "MFU", "ceiling", "intensity", "GB/s", "stamped_ms");
  Stack st(dev, kLlama8b, layers, DType::bf16, std::max(batches.back(), prompts.back()));
  st.caches(batches.back(), context + 1);
  std::vector<double> ops_b1, ops_long;
  for (int64_t b : batches) {
    const double t = time_steps(dev, st, false, b, context, 20);
    double stamped = 0;
    std::vector<double> ops = op_breakdown(dev, st, false, b, context, layers, &stamped);
    if (b == 1) ops_b1 = ops;
    print_row("decode", b, context, layers, t, stamped);
  }
  st.caches(1, prompts.back());
  for (int64_t s : prompts) {
    const double t = time_steps(dev, st, true, 1, s, s >= 4096 ? 3 : 5);
    double stamped = 0;
    std::vector<double> ops = op_breakdown(dev, st, true, 1, s, layers, &stamped);
    if (s == prompts.back()) ops_long = ops;
    print_row("prefill", 1, s, layers, t, stamped);
  }
  std::printf(
      "  (stamped_ms: the same step with every op bracketed by mark(); the difference "
      "is the stamp kernels' own cost)\n");
  static const char* kOpNames[kComputeOps] = {
      "rmsnorm_attn",  "qkv_proj",    "rope",         "kv_write", "attention", "o_proj",
      "residual_attn", "rmsnorm_mlp", "gate_up_proj", "swiglu",   "down_proj", "residual_mlp"};
  std::printf("\n  per-op device time per step (ms, %d layers): decode B=1 | prefill S=%lld\n",
              layers, static_cast<long long>(prompts.back()));
  for (int i = 0; i < kComputeOps; ++i)
    std::printf("    %-14s %9.4f | %9.3f\n", kOpNames[i], ops_b1[i] * 1e3, ops_long[i] * 1e3);
  std::printf("\n  cuBLASLt choices:\n%s", dev.gemm_algos().c_str());
  std::printf(
      "\n  one layer's attention, serve's paged kernel against run's (same K and V read):\n");
  for (int64_t b : quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 16, 64})
    time_varlen_vs_decode(dev, kLlama8b, b, context);
  return 0;
}

// Each section inside its own catch (check_sections.h): a throw is that section's FAIL, the
// rest still run, and the last line is the verdict device-check.sh reads.
int run(bool quick) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("device-check: SKIP: no CUDA device (cudaGetDeviceCount: %s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  DeviceOptions o;
  o.backend = "cuda";
  CudaDevice dev(o, 0);
  const DeviceCaps& c = dev.caps();
  std::printf(
      "device-check: %s, %d SMs, %.1f GiB budget, L2 %.0f MiB, globaltimer step %.0f ns, "
      "mark->host uncertainty %.1f us\n",
      c.name.c_str(), dev.sm_count(), c.memory_bytes / (1u << 30), c.llc_bytes / (1u << 20),
      c.timer_resolution_s * 1e9, dev.mark_uncertainty_s() * 1e6);
  CheckSections sections(stdout);
  sections.run("[1] clocks", [&] { return check_clocks(dev); });
  check_correctness(dev, quick, sections);
  sections.run("[3] roofline", [&] { return roofline(dev, quick); });
  check_cudnn_attention(dev, quick, sections);
  sections.run("[5] fp8", [&] { return check_fp8_gemm(dev, quick); });
  std::printf("\n%s\n", sections.verdict().c_str());
  return sections.failures() ? 1 : 0;
}

}  // namespace
}  // namespace tpb

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  try {
    return tpb::run(quick);
  } catch (const std::exception& e) {  // before the sections: the device did not open
    std::printf("device-check: FAIL (the device did not open: %s)\n", e.what());
    return 1;
  }
}
