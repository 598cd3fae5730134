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
#include "tests/gpu/fp8_check.h"
#include "tests/gpu/layer_check.h"
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
constexpr int kComputeOps = 12;  // a TP=1 layer: no all-reduces

int64_t host_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// L layers of weights and KV caches plus one set of activations, run as the step driver does.
class Stack {
 public:
  Stack(CudaDevice& dev, const CheckShape& s, int layers, DType t, int64_t max_tokens)
      : dev_(dev), s_(s), t_(t), layers_(layers) {
    const int64_t h = s.hidden, qd = s.q_heads * s.head_dim, I = s.inter;
    qkvw_ = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
    for (int l = 0; l < layers; ++l) {
      // Distinct weights per layer: the stack's weights (GBs) stream from HBM, not L2.
      w_.push_back(make(qkvw_, h, 0.02f));
      w_.push_back(make(h, qd, 0.02f));
      w_.push_back(make(2 * I, h, 0.02f));
      w_.push_back(make(h, I, 0.02f));
      w_.push_back(make(2, h, 1.0f));  // the two gammas
    }
    x_ = make(max_tokens, h, 1.0f);
    xn_ = make(max_tokens, h, 0);
    qkv_ = make(max_tokens, qkvw_, 0);
    att_ = make(max_tokens, qd, 0);
    o_ = make(max_tokens, h, 0);
    gu_ = make(max_tokens, 2 * I, 0);
    act_ = make(max_tokens, I, 0);
  }

  // K and V caches [batch, max_ctx, kv_heads, head_dim] per layer, replacing the old ones.
  void caches(int64_t batch, int64_t max_ctx) {
    kv_.clear();
    kv_bufs_.clear();  // freed before the new ones are counted against the budget
    for (int l = 0; l < 2 * layers_; ++l)
      kv_.push_back(make(batch * max_ctx, s_.kv_heads * s_.head_dim, 1.0f, &kv_bufs_));
    max_ctx_ = max_ctx;
  }

  // One step; with `slot`, each op is bracketed by marks (2 per op) from *slot on.
  void step(bool prefill, int64_t batch, int64_t n, std::size_t* slot) {
    const int64_t tps = prefill ? n : 1, pos0 = prefill ? 0 : n, ctx = prefill ? n : n + 1;
    const int64_t T = batch * tps, h = s_.hidden, I = s_.inter, qd = s_.q_heads * s_.head_dim;
    const AttnShape a{batch, s_.q_heads, s_.kv_heads, s_.head_dim, max_ctx_};
    auto op = [&](auto&& f) {
      if (slot) dev_.mark((*slot)++);
      f();
      if (slot) dev_.mark((*slot)++);
    };
    for (int l = 0; l < layers_; ++l) {
      void* const* w = &w_[static_cast<std::size_t>(5 * l)];
      const char* g = static_cast<const char*>(w[4]);
      void* kc = kv_[static_cast<std::size_t>(2 * l)];
      void* vc = kv_[static_cast<std::size_t>(2 * l + 1)];
      const std::size_t gsz = static_cast<std::size_t>(h) * dtype_bytes(t_);
      op([&] { dev_.rmsnorm(x_, g, xn_, T, h, 1e-5f, t_); });
      op([&] { dev_.gemm(xn_, w[0], qkv_, T, qkvw_, h, t_); });
      op([&] { dev_.rope(qkv_, T, tps, pos0, a, 500000.0f, t_); });
      op([&] { dev_.kv_write(qkv_, kc, vc, tps, pos0, a, t_); });
      op([&] {
        if (prefill)
          dev_.attention_prefill(qkv_, kc, vc, att_, n, a, t_);
        else
          dev_.attention_decode(qkv_, kc, vc, att_, ctx, a, t_);
      });
      op([&] { dev_.gemm(att_, w[1], o_, T, h, qd, t_); });
      op([&] { dev_.add(x_, o_, static_cast<std::size_t>(T * h), t_); });
      op([&] { dev_.rmsnorm(x_, g + gsz, xn_, T, h, 1e-5f, t_); });
      op([&] { dev_.gemm(xn_, w[2], gu_, T, 2 * I, h, t_); });
      op([&] { dev_.swiglu(gu_, act_, T, I, t_); });
      op([&] { dev_.gemm(act_, w[3], o_, T, h, I, t_); });
      op([&] { dev_.add(x_, o_, static_cast<std::size_t>(T * h), t_); });
    }
  }

 private:
  void* make(int64_t rows, int64_t cols, float scale, std::vector<DeviceBuffer>* into = nullptr) {
    if (!into) into = &bufs_;
    into->push_back(dev_.alloc(static_cast<std::size_t>(rows * cols) * dtype_bytes(t_)));
    const FillSpec f = whole_tensor_fill(seed_++, scale, rows, cols);
    dev_.fill(into->back().get(), t_, f);
    return into->back().get();
  }

  CudaDevice& dev_;
  CheckShape s_;
  DType t_;
  int layers_;
  int64_t qkvw_ = 0, max_ctx_ = 0;
  uint64_t seed_ = 1;
  std::vector<DeviceBuffer> bufs_, kv_bufs_;
  std::vector<void*> w_, kv_;
  void *x_, *xn_, *qkv_, *att_, *o_, *gu_, *act_;
};

// Step time of `steps` steps (median), bracketed by one mark pair each.
double time_steps(CudaDevice& dev, Stack& st, bool prefill, int64_t batch, int64_t n, int steps) {
  for (int i = 0; i < 2; ++i) st.step(prefill, batch, n, nullptr);  // warm-up: GEMM plans
  dev.synchronize();
  for (int i = 0; i < steps; ++i) {
    dev.mark(static_cast<std::size_t>(2 * i));
    st.step(prefill, batch, n, nullptr);
    dev.mark(static_cast<std::size_t>(2 * i + 1));
  }
  dev.synchronize();
  std::vector<int64_t> ns(static_cast<std::size_t>(2 * steps));
  dev.collect_marks(0, ns.size(), ns.data());
  std::vector<double> d;
  for (int i = 0; i < steps; ++i)
    d.push_back(1e-9 * static_cast<double>(ns[2 * i + 1] - ns[2 * i]));
  return median(d);
}

// One step with every op stamped: per-op device time, and the stamp overhead it adds.
std::vector<double> op_breakdown(CudaDevice& dev, Stack& st, bool prefill, int64_t batch, int64_t n,
                                 int layers, double* stamped_step_s) {
  std::size_t slot = 0;
  dev.mark(slot++);
  st.step(prefill, batch, n, &slot);
  dev.mark(slot++);
  dev.synchronize();
  std::vector<int64_t> ns(slot);
  dev.collect_marks(0, slot, ns.data());
  *stamped_step_s = 1e-9 * static_cast<double>(ns[slot - 1] - ns[0]);
  std::vector<double> per_op(kComputeOps, 0.0);
  for (int l = 0; l < layers; ++l)
    for (int o = 0; o < kComputeOps; ++o) {
      const std::size_t i = 1 + 2 * static_cast<std::size_t>(l * kComputeOps + o);
      per_op[static_cast<std::size_t>(o)] += 1e-9 * static_cast<double>(ns[i + 1] - ns[i]);
    }
  return per_op;
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

// --attention cudnn on a second device of the same GPU: the layer's ops against the host
// reference with cuDNN's fused attention (bf16 and fp16: fp32 keeps the native kernels, checked
// above), then the 8B step side by side with the native attention (decode B=1, prefill S=4096).
// A build without cudnn-frontend, or a machine without cuDNN 9, fails here with the reason.
int check_cudnn_attention(CudaDevice& native, bool quick) {
  std::printf("\n[4] --attention cudnn (cuDNN's fused SDPA)\n");
  DeviceOptions o;
  o.backend = "cuda";
  o.attention = "cudnn";
  std::unique_ptr<CudaDevice> dev;
  try {
    dev = std::make_unique<CudaDevice>(o, 0);
  } catch (const std::exception& e) {
    std::printf("  FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("  %s\n", dev->kernel_choices().front().c_str());
  int failures = 0;
  struct Case {
    CheckShape s;
    bool prefill;
    int64_t batch, n;
    DType t;
  };
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
  for (const Case& k : cases) {
    std::printf("  %s %s B=%lld %s=%lld %s\n", k.s.name, k.prefill ? "prefill" : "decode",
                static_cast<long long>(k.batch), k.prefill ? "S" : "context",
                static_cast<long long>(k.n), dtype_name(k.t));
    failures += check_layer(*dev, k.s, k.prefill, k.batch, k.n, k.t);
  }
  // Serve's mixed steps through cuDNN's paged attention: every sequence in one call, decodes
  // beside chunks with a cached part, five sequences in a graph of eight (three padding).
  for (const CheckShape& s :
       quick ? std::vector<CheckShape>{kSmall128} : std::vector<CheckShape>{kSmall128, kLlama8b}) {
    std::printf("  %s mixed step (paged, ragged) bf16\n", s.name);
    failures += check_varlen(*dev, s, DType::bf16);
  }
  if (const std::string why = dev->cudnn_paged_refused(); !why.empty()) {
    std::printf("  FAIL: cuDNN refused the paged graph, so the steps above ran natively: %s\n",
                why.c_str());
    ++failures;
  }
  std::printf("  one layer's attention, serve's paged call against run's (cuDNN both):\n");
  for (int64_t b : quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 16, 64})
    time_varlen_vs_decode(*dev, kLlama8b, b, 1024);
  const int layers = quick ? 2 : 4;
  const int64_t prompt = quick ? 512 : 4096;
  std::printf("  %s x %d layers, bf16, TP=1, p50 step ms: %-9s %-9s %s\n", kLlama8b.name, layers,
              "native", "cudnn", "cudnn/native");
  Stack a(native, kLlama8b, layers, DType::bf16, prompt),
      b(*dev, kLlama8b, layers, DType::bf16, prompt);
  a.caches(1, std::max<int64_t>(prompt, 1025));
  b.caches(1, std::max<int64_t>(prompt, 1025));
  for (const auto& [prefill, n] : {std::pair{false, int64_t{1024}}, std::pair{true, prompt}}) {
    const double tn = time_steps(native, a, prefill, 1, n, prefill ? 3 : 20);
    const double tc = time_steps(*dev, b, prefill, 1, n, prefill ? 3 : 20);
    std::printf("    %-7s %s=%-5lld %9.3f %9.3f %6.3f\n", prefill ? "prefill" : "decode",
                prefill ? "S" : "ctx", static_cast<long long>(n), tn * 1e3, tc * 1e3, tc / tn);
  }
  return failures;
}

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
  int failures = 0;

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
  failures += (inside ? 0 : 1) + (spin_ok ? 0 : 1);
  std::printf("  marks inside the host bracket: %s; busy_work(5 ms) measured %.3f ms: %s\n",
              inside ? "ok" : "FAIL", spin_ms, spin_ok ? "ok" : "FAIL");

  std::printf("\n[2] correctness vs host fp32 reference (normalized max error per op)\n");
  for (DType t : {DType::fp32, DType::bf16, DType::fp16}) {
    const int64_t bad = check_fill(dev, t);
    failures += bad ? 1 : 0;
    std::printf("  fill %s: %lld mismatches (bit-exact vs fill_value)\n", dtype_name(t),
                static_cast<long long>(bad));
  }
  struct Case {
    CheckShape s;
    bool prefill;
    int64_t batch, n;
    DType t;
  };
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
  for (const Case& k : cases) {
    std::printf("  %s %s B=%lld %s=%lld %s\n", k.s.name, k.prefill ? "prefill" : "decode",
                static_cast<long long>(k.batch), k.prefill ? "S" : "context",
                static_cast<long long>(k.n), dtype_name(k.t));
    failures += check_layer(dev, k.s, k.prefill, k.batch, k.n, k.t);
  }
  // The mixed step of tpbench serve: ragged decodes beside a chunk with a cached part.
  for (const auto& [shape, t] : {std::pair{kSmall, DType::fp32}, std::pair{kSmall, DType::bf16},
                                 std::pair{kLlama8b, DType::bf16}}) {
    if (quick && shape.hidden == kLlama8b.hidden) continue;
    std::printf("  %s mixed step (varlen, paged KV) %s\n", shape.name, dtype_name(t));
    failures += check_varlen(dev, shape, t);
  }

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
  std::vector<double> ops_b1;
  for (int64_t b : batches) {
    const double t = time_steps(dev, st, false, b, context, 20);
    double stamped = 0;
    std::vector<double> ops = op_breakdown(dev, st, false, b, context, layers, &stamped);
    if (b == 1) ops_b1 = ops;
    print_row("decode", b, context, layers, t, stamped);
  }
  st.caches(1, prompts.back());
  std::vector<double> ops_long;
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

  failures += check_cudnn_attention(dev, quick);
  failures += check_fp8_gemm(dev, quick);

  std::printf("\ndevice-check: %s (%d failure%s)\n", failures ? "FAIL" : "PASS", failures,
              failures == 1 ? "" : "s");
  return failures ? 1 : 0;
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
  } catch (const std::exception& e) {
    std::fprintf(stderr, "device-check: error: %s\n", e.what());
    return 1;
  }
}
