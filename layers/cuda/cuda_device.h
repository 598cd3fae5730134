// The CUDA Device: one GPU per rank with its own stream, cuBLASLt GEMMs and the kernels of
// layers/cuda. This header has no CUDA includes, so harness code and the collectives can use
// the CUDA-specific accessors (stream, GEMM choices, clock uncertainty) without nvcc.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "layers/cuda/plan/sdpa_paged_plan.h"
#include "layers/device.h"
#include "layers/device_options.h"

namespace tpb {

struct SdpaLayout;   // plan/sdpa_plan.h
struct Int32Upload;  // cuda_device_impl.h
struct VarlenMeta;   // varlen_plan.h

class CudaDevice final : public Device {
 public:
  // Uses GPU `device_index` (the factory picks local_rank % device count).
  CudaDevice(const DeviceOptions& o, int device_index);
  ~CudaDevice() override;

  const DeviceCaps& caps() const override { return caps_; }
  DeviceBuffer alloc(std::size_t bytes) override;
  void free_raw(void* p) noexcept override;
  void refresh_budget() override;
  void upload(void* dst, const float* src, std::size_t count, DType t) override;
  void download(float* dst, const void* src, std::size_t count, DType t) override;
  void fill(void* dst, DType t, const FillSpec& f) override;

  void gemm(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
            DType t) override;
  void gemm_fp8(const void* x, const void* w, float w_scale, void* y, int64_t m, int64_t n,
                int64_t k, DType act) override;
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
  // One kernel each (rmsnorm.cu, rope_kv_write.cu).
  void add_rmsnorm(void* x, const void* y, const void* gamma, void* xn, int64_t rows, int64_t dim,
                   float eps, DType t) override;
  void rope_kv_write(void* qkv, void* k_cache, void* v_cache, int64_t tokens,
                     int64_t tokens_per_seq, int64_t pos0, const AttnShape& s, float theta,
                     DType t) override;
  // Mixed steps (cuda_varlen.cc): the batch is packed and uploaded once per step, on the first
  // op that sees it, and reused while the batch is the same. Not under graph capture.
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
  // A copy kernel looping on a side stream (bandwidth_hog.cc).
  std::unique_ptr<BandwidthHog> start_bandwidth_hog(std::size_t buffer_bytes) override;
  // Spinning blocks holding a share of the SMs on a side stream (sm_hold.cc).
  std::unique_ptr<SmHold> hold_sms(double fraction) override;

  // Stream capture into one CUDA graph (thread-local capture mode, so other threads' CUDA
  // calls, e.g. the hog's, do not invalidate it). Nothing may allocate while capturing: run a
  // warm-up step first so lazily grown workspaces exist.
  bool supports_graphs() const override { return true; }
  void begin_capture() override;
  void end_capture(std::size_t slots_per_replay) override;
  void replay() override;
  void release_graph() noexcept override;

  void reserve_marks(std::size_t slots) override;
  void mark(std::size_t slot) override;
  void collect_marks(std::size_t first, std::size_t count, int64_t* host_ns) override;
  // Per-op times from CUPTI's kernel, memcpy and memset records (layers/cuda/activity): an op's
  // interval is its work's first start to last end on the GPU, so the GPU's idle time between
  // ops (waiting for the host) falls outside every op and counts as host gap. Kernels replayed
  // from a CUDA graph are tied to the graph's launch, not to an op: those runs stay whole.
  void activity_begin(std::size_t slot) override;
  void activity_end(std::size_t slot) override;
  bool collect_activity(std::size_t first, std::size_t count, int64_t* host_ns,
                        int64_t* launched_ns) override;
  // Waits for the stream. While a poll hook is set (a device-side collective's watchdog), the
  // wait polls the stream and calls the hook, so a hung collective throws instead of hanging.
  void synchronize() override;

  // CUDA specifics.
  void* stream() const;  // the cudaStream_t all of this device's work runs on
  int device_index() const;
  int sm_count() const;
  bool cudnn_attention(DType t) const;  // --attention cudnn runs dtype t's attention
  // Serve's mixed-step attention under --attention cudnn since the device opened: calls that
  // ran cuDNN's paged graph, calls that ran the native kernels because cuDNN refused the
  // step's shape (each refused shape goes native; the others keep cuDNN), the first reason.
  struct PagedAttentionUse {
    int64_t cudnn_calls = 0, native_calls = 0;
    std::string refused;
  };
  PagedAttentionUse cudnn_paged_use() const;
  PagedPadding cudnn_paged_padding() const;  // the layout's padding the loaded cuDNN runs
  std::string pci_bus_id() const;            // "0000:1B:00.0", for NVML
  std::string gemm_algos() const;            // the cuBLASLt choice per GEMM shape made, one a line
  // Times each GEMM `gemms` issues and keeps the group's choice (cuda_gemm.h).
  void tune_gemms(const std::function<void()>& gemms, const GroupGather& gather) override;
  void profiler_capture(bool on) override;
  void range_push(const char* name) override;
  void range_pop() override;
  // The attention line, serve's mixed-step attention since the last call (a point's: the
  // harness asks once at each point's end), then the GEMM shapes a tuning pass chose for the
  // group, an entry a line: the same on every rank of a group (tests/tools/check_results.py).
  std::vector<std::string> kernel_choices() const override;
  // Half the wider bracket of the point's clock line plus the timer's resolution.
  double mark_uncertainty_s() const override;
  void calibrate_marks(bool point_start) override;
  void set_sync_poll(std::function<void(double waited_s)> poll);

 private:
  struct Impl;
  // Checks that `len` positions (decode's context, prefill's prompt) fit the cache, then runs
  // cuDNN's fused attention when --attention cudnn covers dtype `t`, its workspace grown as
  // needed; false when the native kernels are to run instead.
  bool sdpa_if_chosen(bool decode, int64_t len, const AttnShape& s, const void* qkv,
                      const void* k_cache, const void* v_cache, void* out, DType t);
  // Replaces `b` with a buffer of `bytes`, the old one freed first: the memory budget's check
  // counts what is in use. Waits for the device first (synchronize), outside graph capture.
  void regrow(DeviceBuffer& b, std::size_t bytes);
  const int32_t* varlen_meta(const StepBatch& b, int64_t block_tokens, VarlenMeta& m);
  // `data` on the device through `u` (uploaded only when it differs from u's last upload).
  const int32_t* upload_int32(Int32Upload& u, const std::vector<int32_t>& data);
  // --attention cudnn's paged attention of a mixed step (cuda_varlen.cc); false when cuDNN
  // refused its graph (Impl::paged says why).
  bool attention_varlen_sdpa(const void* qkv, const void* k_cache, const void* v_cache, void* out,
                             const StepBatch& b, const KvLayout& kv, const AttnShape& s, DType t);
  std::unique_ptr<Impl> impl_;
  DeviceCaps caps_;
};

}  // namespace tpb
