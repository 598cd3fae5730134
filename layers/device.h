// The Device interface: one per rank. Memory, the layer ops, and timestamps on the device's
// own stream. Backends: layers/cpu (BLAS), layers/cuda (cuBLAS + kernels).
// All tensors are row-major; activations are [tokens, width]; weights are [out, in] as in
// torch.nn.Linear, so a projection is y = x * W^T.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/errors.h"
#include "layers/fill_hash.h"
#include "layers/step_batch.h"

namespace tpb {

struct DeviceCaps {
  std::string backend;            // "cpu" | "cuda" | "model"
  std::string name;               // CPU model or GPU name
  std::vector<DType> dtypes;      // supported element types
  bool device_timer = false;      // mark() stamps on the device timeline (not host enqueue time)
  double timer_resolution_s = 0;  // observed resolution of mark()
  double memory_bytes = 0;        // what this rank may plan on (its budget less backend reserves)
  double llc_bytes = 0;           // 0 = unknown
  std::string llc_source;         // where llc_bytes came from
  // What callers test instead of the backend's name:
  bool host_compute = false;   // ops run on the calling host thread and are done on return
  bool device_memory = false;  // buffers are device memory: not host-addressable
  bool startup_probe = false;  // peaks can be measured at start-up (--hardware measure_at_startup)
  int host_ranks = 1;          // ranks sharing this host (DeviceOptions::local_size)
  // Weights, activations, KV cache and all-reduce may differ (base/dtype.h DTypes); otherwise
  // one dtype runs throughout (the CPU and CUDA backends).
  bool separate_dtypes = false;
  // Device::gemm_fp8 runs (CUDA on compute capability 8.9 and later: FP8 tensor cores).
  bool fp8_gemm = false;
  // add_rmsnorm and rope_kv_write are one kernel each: the step uses them where no per-op
  // stamp falls between the two ops (--stamps collectives).
  bool fused_elementwise = false;
  // Where per-op times come from under --stamps collectives (Device::activity_begin): "host
  // clock", "cupti", or "none: <why>".
  std::string per_op_times = "none: the backend records no per-op times";
  // What the backend knows makes its own figures doubtful, one "name: why" line each; every
  // point on this device carries them among its warnings.
  std::vector<std::string> warnings;
};

class Device;

// A running memory-bandwidth competitor (--inject mem_contend); it stops when destroyed.
class BandwidthHog {
 public:
  virtual ~BandwidthHog() = default;
  virtual double bytes_moved() const = 0;  // read + written so far
};

// CUDA-graph replays (--cuda-graph): a mark captured at `slot` writes, on the r-th replay
// (r = 0, 1, ...), slot + r * slots_per_replay. The device keeps r in its own memory and a
// kernel at the end of each replay advances it, so one captured graph stamps fresh slots on
// every replay without host work between launches. Shared by the stamp kernel and the host.
#if defined(__CUDACC__)
#define TPB_HOST_DEVICE __host__ __device__
#else
#define TPB_HOST_DEVICE
#endif
TPB_HOST_DEVICE inline std::size_t graph_replay_slot(std::size_t captured_slot, std::size_t replay,
                                                     std::size_t slots_per_replay) {
  return captured_slot + replay * slots_per_replay;
}

// RAII device allocation. Freed through the device that made it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* dev, void* ptr, std::size_t bytes) : dev_(dev), ptr_(ptr), bytes_(bytes) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer();

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(dev_, o.dev_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  Device* dev_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Shapes of the attention ops; strides are in elements.
struct AttnShape {
  int64_t batch = 0;     // sequences
  int64_t q_heads = 0;   // local query heads
  int64_t kv_heads = 0;  // local KV heads (q_heads % kv_heads == 0)
  int64_t head_dim = 0;
  int64_t max_ctx = 0;  // KV cache capacity per sequence (positions)
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceCaps& caps() const = 0;

  // Memory. alloc throws BackendError when the allocation fails.
  virtual DeviceBuffer alloc(std::size_t bytes) = 0;
  virtual void free_raw(void* p) noexcept = 0;
  virtual void upload(void* dst, const float* src, std::size_t count, DType t) = 0;  // converts
  virtual void download(float* dst, const void* src, std::size_t count, DType t) = 0;
  virtual void fill(void* dst, DType t, const FillSpec& f) = 0;  // deterministic init

  // y[m, n] = x[m, k] * w[n, k]^T  (fp32 accumulate)
  virtual void gemm(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
                    DType t) = 0;
  // The same with w stored fp8 (e4m3, filled as fill_hash.h's fp8_fill_scale says) and x, y in
  // `act`: y = x * (w_scale * w)^T, x quantised per tensor on the device first
  // (plan_gemm_fp8). Only where caps().fp8_gemm; elsewhere it refuses naming --dtype.
  virtual void gemm_fp8(const void* x, const void* w, float w_scale, void* y, int64_t m, int64_t n,
                        int64_t k, DType act) {
    (void)x, (void)w, (void)w_scale, (void)y, (void)m, (void)n, (void)k, (void)act;
    throw BadInput("--dtype: the " + caps().backend + " backend has no fp8 GEMM");
  }
  // y = x / rms(x) * gamma, per row of `dim`
  virtual void rmsnorm(const void* x, const void* gamma, void* y, int64_t rows, int64_t dim,
                       float eps, DType t) = 0;
  // Rotary embedding in place on qkv rows [tokens, (q_heads + 2 kv_heads) * head_dim]; the
  // position of token i is pos0 + (i % tokens_per_seq).
  virtual void rope(void* qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
                    const AttnShape& s, float theta, DType t) = 0;
  // Copies the k and v parts of qkv rows into the caches [batch, max_ctx, kv_heads, head_dim]
  // at positions pos0 .. pos0 + tokens_per_seq - 1 of each sequence.
  virtual void kv_write(const void* qkv, void* k_cache, void* v_cache, int64_t tokens_per_seq,
                        int64_t pos0, const AttnShape& s, DType t) = 0;
  // Decode: one query per sequence (in qkv rows) attends to cache positions [0, ctx_len).
  // out is [batch, q_heads * head_dim].
  virtual void attention_decode(const void* qkv, const void* k_cache, const void* v_cache,
                                void* out, int64_t ctx_len, const AttnShape& s, DType t) = 0;
  // Prefill: causal attention of `seq` tokens per sequence over the cache positions [0, seq).
  virtual void attention_prefill(const void* qkv, const void* k_cache, const void* v_cache,
                                 void* out, int64_t seq, const AttnShape& s, DType t) = 0;
  // out[r, i] = silu(gu[r, i]) * gu[r, inter + i]
  virtual void swiglu(const void* gate_up, void* out, int64_t rows, int64_t inter, DType t) = 0;
  // x += y
  virtual void add(void* x, const void* y, std::size_t count, DType t) = 0;
  // x += y, then xn = rmsnorm(x) * gamma per row: a residual add and the RMSNorm after it.
  // A backend may do both in one pass (caps().fused_elementwise); the default runs the two ops.
  virtual void add_rmsnorm(void* x, const void* y, const void* gamma, void* xn, int64_t rows,
                           int64_t dim, float eps, DType t) {
    add(x, y, static_cast<std::size_t>(rows * dim), t);
    rmsnorm(x, gamma, xn, rows, dim, eps, t);
  }
  // rope, then kv_write of the rotated rows (the two ops' arguments): qkv ends as after rope,
  // the caches as after kv_write.
  virtual void rope_kv_write(void* qkv, void* k_cache, void* v_cache, int64_t tokens,
                             int64_t tokens_per_seq, int64_t pos0, const AttnShape& s, float theta,
                             DType t) {
    rope(qkv, tokens, tokens_per_seq, pos0, s, theta, t);
    kv_write(qkv, k_cache, v_cache, tokens_per_seq, pos0, s, t);
  }

  // Mixed (serving) steps over a paged KV cache (layers/step_batch.h): qkv and out rows are
  // the batch's new tokens, sequence after sequence; token j of sequence i sits at position
  // seqs[i].cached + j. The caches are [kv.num_blocks, kv.block_tokens, kv_heads, head_dim];
  // of AttnShape only the heads and head_dim are read. A backend without them keeps the
  // defaults, which throw BackendError naming the backend.
  virtual void rope_varlen(void* qkv, const StepBatch& b, const AttnShape& s, float theta,
                           DType t) {
    (void)qkv, (void)b, (void)s, (void)theta, (void)t;
    no_mixed();
  }
  // Each new token's K and V into its position, through its sequence's block table.
  virtual void kv_write_varlen(const void* qkv, void* k_cache, void* v_cache, const StepBatch& b,
                               const KvLayout& kv, const AttnShape& s, DType t) {
    (void)qkv, (void)k_cache, (void)v_cache, (void)b, (void)kv, (void)s, (void)t;
    no_mixed();
  }
  // Causal: token j of sequence i attends to its positions [0, cached + j], read through the
  // block table (kv_write_varlen has written this step's). out is [tokens, q_heads * head_dim].
  virtual void attention_varlen(const void* qkv, const void* k_cache, const void* v_cache,
                                void* out, const StepBatch& b, const KvLayout& kv,
                                const AttnShape& s, DType t) {
    (void)qkv, (void)k_cache, (void)v_cache, (void)out, (void)b, (void)kv, (void)s, (void)t;
    no_mixed();
  }
  // Greedy sampling's local half: per row of logits [rows, cols], the largest value and its
  // column (ties: the lowest column), written to host memory. Waits for the result.
  virtual void row_argmax(const void* logits, int64_t rows, int64_t cols, float* max_host,
                          int32_t* col_host, DType t) {
    (void)logits, (void)rows, (void)cols, (void)max_host, (void)col_host, (void)t;
    no_mixed();
  }

  // Extra work for --inject slowdown: keeps this rank's execution resource busy for about
  // `seconds` (a calibrated spin or real work, never a sleep that frees it).
  virtual void busy_work(double seconds) = 0;

  // --inject mem_contend: starts copying between two buffers of `buffer_bytes` each in the
  // memory this device's work uses, beside that work. Only the backend knows where its work's
  // memory is (host DRAM for the CPU, HBM for a GPU, where the hog must be a copy kernel on a
  // side stream), hence a Device method; it stays this small because the harness only starts
  // and stops the hog. nullptr (the default) means "host memory": the caller then runs its
  // host copy thread (harness/drive/injector.h MemContender).
  virtual std::unique_ptr<BandwidthHog> start_bandwidth_hog(std::size_t buffer_bytes) {
    (void)buffer_bytes;
    return nullptr;
  }

  // CUDA graphs (--cuda-graph). Between begin_capture and end_capture the device's work,
  // marks included, is recorded instead of run; replay() then runs it once more per call.
  // Marks recorded while capturing follow graph_replay_slot; end_capture may replay the graph
  // once, unmeasured (CUDA: upload and first launch), and then resets the replay index to 0.
  // Backends without graphs report false from supports_graphs and throw std::logic_error from the
  // rest (the harness checks supports_graphs first).
  virtual bool supports_graphs() const { return false; }
  virtual void begin_capture() { no_graphs(); }
  virtual void end_capture(std::size_t slots_per_replay) {
    (void)slots_per_replay;
    no_graphs();
  }
  virtual void replay() { no_graphs(); }
  // Destroys the captured graph, without waiting for a replay in flight (CUDA frees it when
  // that completes). Must run before the collective the graph captured is finalised: NCCL's
  // finalize waits for every graph holding one of its operations. A no-op without a graph.
  virtual void release_graph() noexcept {}

  // Timestamps. reserve_marks sizes the stamp storage before the timed loop (no allocation
  // inside it). mark(slot) stamps on the device's stream; collect_marks (after synchronize)
  // returns them as host steady-clock nanoseconds.
  virtual void reserve_marks(std::size_t slots) = 0;
  virtual void mark(std::size_t slot) = 0;
  virtual void collect_marks(std::size_t first, std::size_t count, int64_t* host_ns) = 0;
  virtual void synchronize() = 0;

  // Per-op times without a stamp of their own (--stamps collectives, layers/timeline.h): the
  // work issued between activity_begin(slot) and activity_end(slot + 1) is recorded by the
  // backend's own means (the CPU: its clock, as mark does; CUDA: CUPTI's kernel records, which
  // cost no device time). collect_activity (after synchronize) returns per slot pair the first
  // start and the last end of that work in host steady-clock ns, {0, 0} for a pair with no
  // record, or false when the backend keeps no such record (why: caps().per_op_times). In
  // launched_ns[pair] it returns when the host call that launched the pair's first work
  // returned, 0 where unknown (ops that run on the host thread have no launch): a gap before
  // an op that ends before its launch returned is the device waiting for the host.
  virtual void activity_begin(std::size_t slot) { (void)slot; }
  virtual void activity_end(std::size_t slot) { (void)slot; }
  virtual bool collect_activity(std::size_t first, std::size_t count, int64_t* host_ns,
                                int64_t* launched_ns) {
    (void)first, (void)count, (void)host_ns, (void)launched_ns;
    return false;
  }

  // Profiler hooks, no-ops where the backend has no profiler. profiler_capture(true/false)
  // brackets the measured steps (CUDA: cudaProfilerStart/Stop, so `nsys profile
  // --capture-range=cudaProfilerApi` records those alone); range_push/range_pop name each
  // step and op on the profiler's timeline (CUDA: NVTX ranges).
  virtual void profiler_capture(bool on) { (void)on; }
  virtual void range_push(const char* name) { (void)name; }
  virtual void range_pop() {}

  // What the backend chose at run time for the work it has done, in words, one entry each
  // (CUDA: the cuBLASLt algorithm per GEMM shape, the fastest of the heuristic's candidates
  // as timed on first use). Empty where the backend chooses nothing.
  virtual std::vector<std::string> kernel_choices() const { return {}; }

 private:
  [[noreturn]] void no_graphs() const;
  [[noreturn]] void no_mixed() const;
};

inline void Device::no_graphs() const {
  throw std::logic_error("graph capture on the " + caps().backend + " backend");
}

// A recorded failure, not an assertion: tpbench serve on such a backend stops with this line.
inline void Device::no_mixed() const {
  throw BackendError("mixed steps are not implemented on the " + caps().backend + " backend");
}

inline DeviceBuffer::~DeviceBuffer() {
  if (dev_ && ptr_) dev_->free_raw(ptr_);
}

}  // namespace tpb
