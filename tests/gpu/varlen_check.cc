// The mixed-step ops on the GPU against a plain host reference (double accumulation).
#include "tests/gpu/varlen_check.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "base/cuda_check.h"
#include "layers/cuda/plan/sdpa_paged_plan.h"
#include "layers/cuda/plan/varlen_plan.h"
#include "layers/fill_hash.h"
#include "layers/reference/ref_ops.h"

namespace tpb {
namespace {

using ref::Vec;

// Four decodes after 1, 37, 200 and 0 cached positions (the last a one-token prompt), and a
// `chunk`-token chunk whose first 20 positions are cached (chunk 1: a fifth decode, so the step
// runs the paged decode kernel; five sequences are a cuDNN graph of five, or of eight
// with three empty ones where cuDNN >= 9.25 runs them):
// blocks of 16 positions, handed out in a shuffled order so tables are not contiguous. A
// 45-token chunk leaves attention few blocks, so its positions are split (the combine runs, and
// the short sequences' later splits are empty); 300 tokens need no split.
StepBatch ragged_batch(int64_t block_tokens, int64_t chunk, int64_t& num_blocks) {
  StepBatch b;
  b.seqs = {SeqSlice{1, 1, true, {}}, SeqSlice{37, 1, true, {}}, SeqSlice{20, chunk, true, {}},
            SeqSlice{200, 1, true, {}}, SeqSlice{0, 1, true, {}}};
  num_blocks = 0;
  for (const SeqSlice& s : b.seqs) num_blocks += blocks_needed(s, block_tokens);
  std::vector<int32_t> order(static_cast<std::size_t>(num_blocks));
  std::iota(order.begin(), order.end(), 0);
  std::reverse(order.begin(), order.end());
  std::rotate(order.begin(), order.begin() + 3, order.end());
  std::size_t next = 0;
  for (SeqSlice& s : b.seqs)
    for (int64_t k = 0; k < blocks_needed(s, block_tokens); ++k) s.blocks.push_back(order[next++]);
  return b;
}

int64_t slot_of(const SeqSlice& s, int64_t pos, int64_t bt) {
  return s.blocks[static_cast<std::size_t>(pos / bt)] * bt + pos % bt;
}

void ref_rope_varlen(Vec& qkv, const StepBatch& b, const AttnShape& a, float theta) {
  const int64_t row = (a.q_heads + 2 * a.kv_heads) * a.head_dim;
  int64_t r = 0;
  for (const SeqSlice& s : b.seqs)
    for (int64_t j = 0; j < s.new_tokens; ++j, ++r) {
      Vec one(qkv.begin() + r * row, qkv.begin() + (r + 1) * row);
      ref::rope(one, 1, 1, s.cached + j, a, theta);
      std::copy(one.begin(), one.end(), qkv.begin() + r * row);
    }
}

void ref_kv_write_varlen(const Vec& qkv, Vec& kc, Vec& vc, const StepBatch& b, int64_t bt,
                         const AttnShape& a) {
  const int64_t d = a.head_dim, kvw = a.kv_heads * d, row = (a.q_heads + 2 * a.kv_heads) * d;
  int64_t r = 0;
  for (const SeqSlice& s : b.seqs)
    for (int64_t j = 0; j < s.new_tokens; ++j, ++r) {
      const int64_t at = slot_of(s, s.cached + j, bt) * kvw;
      for (int64_t e = 0; e < kvw; ++e) {
        kc[at + e] = qkv[r * row + a.q_heads * d + e];
        vc[at + e] = qkv[r * row + (a.q_heads + a.kv_heads) * d + e];
      }
    }
}

void ref_attention_varlen(const Vec& qkv, const Vec& kc, const Vec& vc, Vec& out,
                          const StepBatch& b, int64_t bt, const AttnShape& a) {
  const int64_t d = a.head_dim, kvw = a.kv_heads * d, row = (a.q_heads + 2 * a.kv_heads) * d;
  const int64_t g = a.q_heads / a.kv_heads;
  out.assign(static_cast<std::size_t>(b.tokens() * a.q_heads * d), 0.f);
  int64_t r = 0;
  for (const SeqSlice& s : b.seqs)
    for (int64_t j = 0; j < s.new_tokens; ++j, ++r) {
      const int64_t len = s.cached + j + 1;
      for (int64_t h = 0; h < a.q_heads; ++h) {
        const int64_t kh = h / g;
        std::vector<double> p(static_cast<std::size_t>(len));
        double mx = -INFINITY;
        for (int64_t pos = 0; pos < len; ++pos) {
          const int64_t at = slot_of(s, pos, bt) * kvw + kh * d;
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += double(qkv[r * row + h * d + e]) * kc[at + e];
          p[pos] = dot / std::sqrt(double(d));
          mx = std::max(mx, p[pos]);
        }
        double l = 0;
        for (double& x : p) l += (x = std::exp(x - mx));
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t pos = 0; pos < len; ++pos)
            acc += p[pos] * vc[slot_of(s, pos, bt) * kvw + kh * d + e];
          out[(r * a.q_heads + h) * d + e] = static_cast<float>(acc / l);
        }
      }
    }
}

// Rows of logits with planted ties: row i's largest value sits at columns c_i and c_i + 7.
int check_argmax(CudaDevice& dev, DType t) {
  const int64_t rows = 5, cols = 3001;
  Vec x(static_cast<std::size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; ++c) x[i * cols + c] = std::sin(0.37f * c + i) * 0.5f;
  std::vector<int32_t> want(rows);
  for (int64_t i = 0; i < rows; ++i) {
    want[i] = static_cast<int32_t>((i * 977 + 11) % (cols - 8));
    x[i * cols + want[i]] = x[i * cols + want[i] + 7] = 2.0f;
  }
  DeviceBuffer buf = dev.alloc(x.size() * dtype_bytes(t));
  dev.upload(buf.get(), x.data(), x.size(), t);
  std::vector<float> mx(rows);
  std::vector<int32_t> col(rows);
  dev.row_argmax(buf.get(), rows, cols, mx.data(), col.data(), t);
  int wrong = 0;
  for (int64_t i = 0; i < rows; ++i) wrong += col[i] == want[i] && mx[i] == 2.0f ? 0 : 1;
  std::printf("    %-18s %d of %lld rows wrong (ties keep the lowest column) %s\n", "row_argmax",
              wrong, static_cast<long long>(rows), wrong ? "FAIL" : "ok");
  return wrong ? 1 : 0;
}

int check_varlen_batch(CudaDevice& dev, const CheckShape& s, DType t, int64_t chunk) {
  const int64_t bt = 16;
  int64_t num_blocks = 0;
  const StepBatch b = ragged_batch(bt, chunk, num_blocks);
  const KvLayout kv{num_blocks, bt};
  const AttnShape a{static_cast<int64_t>(b.seqs.size()), s.q_heads, s.kv_heads, s.head_dim, 0};
  const int64_t tokens = b.tokens(), row = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
  const int64_t cache = num_blocks * bt * s.kv_heads * s.head_dim;
  const float theta = 500000.0f;
  auto make = [&](int64_t rows, int64_t cols, uint64_t seed) {
    DeviceBuffer x = dev.alloc(static_cast<std::size_t>(rows * cols) * dtype_bytes(t));
    dev.fill(x.get(), t, whole_tensor_fill(seed, 1.0f, rows, cols));
    return x;
  };
  auto down = [&](const DeviceBuffer& x, int64_t n) {
    Vec v(static_cast<std::size_t>(n));
    dev.download(v.data(), x.get(), v.size(), t);
    return v;
  };
  DeviceBuffer qkv = make(tokens, row, 2001), kc = make(cache, 1, 2002), vc = make(cache, 1, 2003);
  DeviceBuffer att = make(tokens, s.q_heads * s.head_dim, 2004);
  int failed = 0;
  const double tol = check_tolerance(t);
  auto report = [&](const char* op, const Vec& got, const Vec& want) {
    const double e = ref::normalized_max_error(got, want);
    failed += e <= tol ? 0 : 1;
    std::printf("    %-18s err %.2e (tol %.0e) %s\n", op, e, tol, e <= tol ? "ok" : "FAIL");
  };
  Vec want = down(qkv, tokens * row);
  dev.rope_varlen(qkv.get(), b, a, theta, t);
  ref_rope_varlen(want, b, a, theta);
  report("rope_varlen", down(qkv, tokens * row), want);

  Vec in0 = down(qkv, tokens * row), kref = down(kc, cache), vref = down(vc, cache);
  dev.kv_write_varlen(qkv.get(), kc.get(), vc.get(), b, kv, a, t);
  ref_kv_write_varlen(in0, kref, vref, b, bt, a);
  report("kv_write_varlen k", down(kc, cache), kref);
  report("kv_write_varlen v", down(vc, cache), vref);

  in0 = down(qkv, tokens * row), kref = down(kc, cache), vref = down(vc, cache);
  dev.attention_varlen(qkv.get(), kc.get(), vc.get(), att.get(), b, kv, a, t);
  ref_attention_varlen(in0, kref, vref, want, b, bt, a);
  if (dev.cudnn_attention(t)) {
    const SdpaPagedLayout l =
        sdpa_paged_layout(b, s.q_heads, s.kv_heads, s.head_dim, kv, dev.cudnn_paged_padding());
    std::printf(
        "    chunk %lld: %lld tokens, cuDNN paged SDPA, graph of %lld sequences x %lld "
        "tokens x %lld blocks\n",
        static_cast<long long>(chunk), static_cast<long long>(tokens),
        static_cast<long long>(l.batch), static_cast<long long>(l.s_q),
        static_cast<long long>(l.pages));
  } else {
    const VarlenAttnPlan plan =
        plan_attention_varlen(b, s.q_heads, s.kv_heads, s.head_dim, t, dev.sm_count());
    std::printf("    chunk %lld: %lld tokens, %s, %lld split(s) of %lld positions\n",
                static_cast<long long>(chunk), static_cast<long long>(tokens), plan.main.kernel,
                static_cast<long long>(plan.splits), static_cast<long long>(plan.chunk));
  }
  report("attention_varlen", down(att, tokens * s.q_heads * s.head_dim), want);
  dev.synchronize();
  return failed;
}

// Device seconds per call of `f`, by CUDA events around `n` calls queued behind a spin that
// outlasts their enqueueing: the device then runs them back to back, so neither the host's
// cost per call (packing, upload checks, launches) nor its gaps count. That host cost, the
// wall time of enqueueing one call, goes to *host_s. 3 unmeasured calls first.
template <class F>
double device_call_s(CudaDevice& dev, int n, F f, double* host_s) {
  for (int i = 0; i < 3; ++i) f();
  dev.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  *host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
  dev.synchronize();
  auto* stream = static_cast<cudaStream_t>(dev.stream());
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  TPB_CUDA_CHECK(cudaEventCreate(&e0));
  TPB_CUDA_CHECK(cudaEventCreate(&e1));
  dev.busy_work(2 * *host_s * n + 1e-3);
  TPB_CUDA_CHECK(cudaEventRecord(e0, stream));
  for (int i = 0; i < n; ++i) f();
  TPB_CUDA_CHECK(cudaEventRecord(e1, stream));
  dev.synchronize();
  float ms = 0;
  const cudaError_t got = cudaEventElapsedTime(&ms, e0, e1);
  TPB_CUDA_CHECK(cudaEventDestroy(e0));
  TPB_CUDA_CHECK(cudaEventDestroy(e1));
  TPB_CUDA_CHECK(got);
  return 1e-3 * ms / n;
}

}  // namespace

void time_varlen_vs_decode(CudaDevice& dev, const CheckShape& s, int64_t batch, int64_t context) {
  const DType t = DType::bf16;
  const int64_t bt = 16, per_seq = (context + bt - 1) / bt;
  StepBatch b;
  for (int64_t i = 0; i < batch; ++i) {
    SeqSlice q{context - 1, 1, true, {}};
    for (int64_t k = 0; k < per_seq; ++k) q.blocks.push_back(static_cast<int32_t>(i * per_seq + k));
    b.seqs.push_back(std::move(q));
  }
  const KvLayout kv{batch * per_seq, bt};
  const AttnShape a{batch, s.q_heads, s.kv_heads, s.head_dim, per_seq * bt};
  const int64_t row = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
  const int64_t cache = batch * per_seq * bt * s.kv_heads * s.head_dim;  // both layouts
  auto make = [&](int64_t n, uint64_t seed) {
    DeviceBuffer x = dev.alloc(static_cast<std::size_t>(n) * dtype_bytes(t));
    dev.fill(x.get(), t, whole_tensor_fill(seed, 1.0f, n, 1));
    return x;
  };
  DeviceBuffer qkv = make(batch * row, 3001), kc = make(cache, 3002), vc = make(cache, 3003);
  DeviceBuffer out = make(batch * s.q_heads * s.head_dim, 3004);
  const int n = 50;
  double hd = 0, hv = 0;
  const double td = device_call_s(
      dev, n,
      [&] { dev.attention_decode(qkv.get(), kc.get(), vc.get(), out.get(), context, a, t); }, &hd);
  const double tv = device_call_s(
      dev, n, [&] { dev.attention_varlen(qkv.get(), kc.get(), vc.get(), out.get(), b, kv, a, t); },
      &hv);
  const double kv_bytes = 2.0 * batch * context * s.kv_heads * s.head_dim * dtype_bytes(t);
  std::printf(
      "    %s B=%-3lld ctx=%lld: decode %8.1f us %7.0f GB/s | varlen %8.1f us %7.0f GB/s "
      "| varlen/decode %5.2f | host us/call: decode %.1f, varlen %.1f\n",
      s.name, static_cast<long long>(batch), static_cast<long long>(context), td * 1e6,
      kv_bytes / td * 1e-9, tv * 1e6, kv_bytes / tv * 1e-9, tv / td, hd * 1e6, hv * 1e6);
}

int check_varlen(CudaDevice& dev, const CheckShape& s, DType t) {
  // A 1-token "chunk" makes every sequence a decode: the paged decode kernel's step.
  int failed = check_varlen_batch(dev, s, t, 45) + check_varlen_batch(dev, s, t, 300) +
               check_varlen_batch(dev, s, t, 1);
  failed += check_argmax(dev, t);
  dev.synchronize();
  return failed;
}

}  // namespace tpb
