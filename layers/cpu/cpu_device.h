// CPU backend: fp32 layer ops on one core per rank (OpenBLAS for GEMMs), stamps from the
// host steady clock. It is the reference every other backend is checked against.
#pragma once
#include <algorithm>
#include <vector>

#include "base/host_clock.h"
#include "layers/device.h"
#include "layers/device_options.h"

namespace tpb {

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(const DeviceOptions& o);
  const DeviceCaps& caps() const override { return caps_; }

  DeviceBuffer alloc(std::size_t bytes) override;
  void free_raw(void* p) noexcept override;
  void upload(void* dst, const float* src, std::size_t count, DType t) override;
  void download(float* dst, const void* src, std::size_t count, DType t) override;
  void fill(void* dst, DType t, const FillSpec& f) override;

  void gemm(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
            DType t) override;
  void rmsnorm(const void* x, const void* gamma, void* y, int64_t rows, int64_t dim, float eps,
               DType t) override;
  void rope(void* qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0, const AttnShape& s,
            float theta, DType t) override;
  void kv_write(const void* qkv, void* k_cache, void* v_cache, int64_t tokens_per_seq, int64_t pos0,
                const AttnShape& s, DType t) override;
  void attention_decode(const void* qkv, const void* k_cache, const void* v_cache, void* out,
                        int64_t ctx_len, const AttnShape& s, DType t) override;
  void attention_prefill(const void* qkv, const void* k_cache, const void* v_cache, void* out,
                         int64_t seq, const AttnShape& s, DType t) override;
  void swiglu(const void* gate_up, void* out, int64_t rows, int64_t inter, DType t) override;
  void add(void* x, const void* y, std::size_t count, DType t) override;
  // Mixed steps (cpu_varlen.cc).
  void rope_varlen(void* qkv, const StepBatch& b, const AttnShape& s, float theta,
                   DType t) override;
  void kv_write_varlen(const void* qkv, void* k_cache, void* v_cache, const StepBatch& b,
                       const KvLayout& kv, const AttnShape& s, DType t) override;
  void attention_varlen(const void* qkv, const void* k_cache, const void* v_cache, void* out,
                        const StepBatch& b, const KvLayout& kv, const AttnShape& s,
                        DType t) override;
  void row_argmax(const void* logits, int64_t rows, int64_t cols, float* max_host,
                  int32_t* col_host, DType t) override;
  void busy_work(double seconds) override;

  void reserve_marks(std::size_t slots) override { marks_.assign(slots, 0); }
  void mark(std::size_t slot) override;
  void collect_marks(std::size_t first, std::size_t count, int64_t* host_ns) override;
  // Ops run on the calling thread, so the clock around an op is its activity record: the same
  // two reads a stamp costs, in the same slots.
  void activity_begin(std::size_t slot) override { mark(slot); }
  void activity_end(std::size_t slot) override { mark(slot); }
  bool collect_activity(std::size_t first, std::size_t count, int64_t* host_ns,
                        int64_t* launched_ns) override {
    collect_marks(first, count, host_ns);
    if (launched_ns)
      std::fill_n(launched_ns, count / 2, int64_t{0});  // no launch: runs when called
    return true;
  }
  void synchronize() override {}

 private:
  DeviceCaps caps_;
  std::vector<int64_t> marks_;
  std::vector<float> scratch_;       // attention scores; grows during warm-up only
  std::vector<float> gemm_scratch_;  // decode GEMMs' repacked x (skinny_gemm); likewise
  double allocated_ = 0;
};

// BadInput naming --dtype unless `t` is fp32, the only dtype the cpu backend's buffers hold:
// every op that takes a dtype checks it first (cpu_device.cc, cpu_varlen.cc).
void cpu_require_fp32(DType t);

// y[m, n] = x[m, k] * w[n, k]^T, fp32 (cpu_gemm.cc); `scratch` as skinny_gemm's.
void cpu_gemm(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
              std::vector<float>& scratch);

// Attention kernels (cpu_attention.cc), fp32.
void cpu_attention_decode(const float* qkv, const float* k_cache, const float* v_cache, float* out,
                          int64_t ctx_len, const AttnShape& s, std::vector<float>& scratch);
void cpu_attention_prefill(const float* qkv, const float* k_cache, const float* v_cache, float* out,
                           int64_t seq, const AttnShape& s, std::vector<float>& scratch);
// out[r, i] = silu(gate_up[r, i]) * gate_up[r, inter + i], fp32 (cpu_swiglu.cc).
void cpu_swiglu(const float* gate_up, float* out, int64_t rows, int64_t inter);
// Causal attention of one block of query rows for one KV head's whole query group, the group's
// heads stacked into one GEMM of group x rows rows (cpu_attention.cc): the prefill kernels'
// inner step. q, k, v and out point at the block's first row and the group's first head.
struct AttnBlock {
  const float* q;
  int64_t q_ld;  // floats between query rows
  const float* k;
  const float* v;
  int64_t kv_ld;  // floats between cache positions; k and v start at position 0
  float* out;
  int64_t out_ld;
  int64_t group, d, rows;
  int64_t prior;  // positions before the block's first row: row r sees prior + r + 1 of them
  float scale;
};
// Query rows per block: each row's causal extent is rounded up to the block's last row.
inline constexpr int64_t kPrefillBlock = 64;
// Floats of scratch that cpu_attention_block needs for blocks of up to `rows` rows.
std::size_t attention_block_scratch(int64_t group, int64_t d, int64_t rows, int64_t positions);
void cpu_attention_block(const AttnBlock& a, float* scratch);
// Paged attention of a mixed step (cpu_attention_varlen.cc), fp32.
void cpu_attention_varlen(const float* qkv, const float* k_cache, const float* v_cache, float* out,
                          const StepBatch& b, const KvLayout& kv, const AttnShape& s,
                          std::vector<float>& scratch);

// Start-up probe of one rank's achievable peaks (cpu_probe.cc). Run on all ranks at once, so
// shared memory bandwidth is divided as it is during the benchmark.
struct ProbeResult {
  double read_bw = 0;     // B/s, sdot over two arrays far larger than the LLC
  double stream_bw = 0;   // B/s, the decode GEMM's own read: skinny_gemm at m = 1 (4 streams)
  double axpy_bw = 0;     // B/s, saxpy: 2 reads + 1 write per element
  double gemm_flops = 0;  // FLOP/s, 1024^3 sgemm, best of several
  // The peak a decode step is judged against: the faster read-only probe. A decode step only
  // reads (weights, the KV cache), and axpy's write stream is not a rate it can reach or miss.
  double bw() const { return read_bw > stream_bw ? read_bw : stream_bw; }
  // Which probe set bw(): "sdot" or "skinny_gemm m=1".
  const char* bw_probe() const { return read_bw > stream_bw ? "sdot" : "skinny_gemm m=1"; }
};
ProbeResult run_cpu_probe(double llc_bytes);

// The fastest of `reps` runs of f(), in seconds: how the probe times its loops, and how
// tests/bench/bench_probe.cc times the reference loops it compares the probe with.
template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const int64_t t0 = steady_now_ns();
    f();
    best = std::min(best, static_cast<double>(steady_now_ns() - t0) * 1e-9);
  }
  return best;
}

}  // namespace tpb
