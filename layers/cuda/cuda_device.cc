// CudaDevice: memory with a budget, conversions, op dispatch through the launch plan, marks.
#include "layers/cuda/cuda_device.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "base/cuda_check.h"
#include "layers/cuda/cuda_device_impl.h"
#include "layers/cuda/cuda_wait.h"
#include "layers/cuda/kernels/kernels.h"
#include "layers/cuda/nvtx_ranges.h"
#include "layers/cuda/plan/launch_plan.h"
#include "layers/cuda/plan/paged_use_line.h"
#include "layers/cuda/plan/sdpa_plan.h"

namespace tpb {
namespace {

// cuBLASLt's recommended workspace on Hopper; it lets the heuristic pick split-K kernels.
constexpr std::size_t kLtWorkspaceBytes = 32u << 20;
// Memory the model may not plan on, beyond the cuBLASLt workspace: NCCL's communicator
// buffers (cudaMalloc'ed by NCCL itself, outside this device's budget: per channel and peer a
// 4 MiB NCCL_BUFFSIZE for each of its protocols, up to about 1 GiB on an NVLink node), and the
// workspaces the first steps grow (decode's split-K partials, a mixed step's packed batch, the
// mark slots, and prefill attention's scores, at most kPrefillScoreBytes). Without it an
// auto-fitted layer count fills the budget and the first step fails.
constexpr double kCollectiveReserveBytes = 1024.0 * (1u << 20);
// After refresh_budget, NCCL's buffers of the protocols the first collectives used are counted
// as taken; this is left for connections it makes later (another protocol's, NVLS's).
constexpr double kCollectiveLateReserveBytes = 256.0 * (1u << 20);
constexpr double kStepWorkspaceReserveBytes = 256.0 * (1u << 20) + kPrefillScoreBytes;

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f bytes (%.3f GiB)", bytes, bytes / (1u << 30));
  return buf;
}

// Host-side conversions for the element types the cuda backend stores.
void from_float(float v, float& out) {
  out = v;
}
void from_float(float v, __nv_bfloat16& out) {
  out = __float2bfloat16_rn(v);
}
void from_float(float v, __half& out) {
  out = __float2half_rn(v);
}
float to_float(float v) {
  return v;
}
float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
float to_float(__half v) {
  return __half2float(v);
}

// Calls f with a value of the host type that holds `t` on the device; fp8 has none here.
template <class F>
void with_element_type(DType t, F f) {
  switch (t) {
    case DType::fp32:
      return f(float{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    case DType::fp16:
      return f(__half{});
    case DType::fp8:
      break;
  }
  throw BadInput("--dtype: the cuda backend does not support fp8");
}

// `wait`: the device's synchronize(), which honours the collective's timeout (a download
// after a step waits behind that step's all-reduces).
template <class T>
void convert_upload(void* dst, const float* src, std::size_t n, cudaStream_t s,
                    const std::function<void()>& wait) {
  std::vector<T> tmp(n);
  for (std::size_t i = 0; i < n; ++i) from_float(src[i], tmp[i]);
  TPB_CUDA_CHECK(cudaMemcpyAsync(dst, tmp.data(), n * sizeof(T), cudaMemcpyHostToDevice, s));
  wait();  // tmp dies here
}

template <class T>
void convert_download(float* dst, const void* src, std::size_t n, cudaStream_t s,
                      const std::function<void()>& wait) {
  std::vector<T> tmp(n);
  TPB_CUDA_CHECK(cudaMemcpyAsync(tmp.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  wait();
  for (std::size_t i = 0; i < n; ++i) dst[i] = to_float(tmp[i]);
}

}  // namespace

CudaDevice::CudaDevice(const DeviceOptions& o, int device_index) : impl_(new Impl) {
  Impl& d = *impl_;
  d.index = device_index;
  TPB_CUDA_CHECK(cudaSetDevice(device_index));
  TPB_CUDA_CHECK(cudaFree(nullptr));  // create the context now, not inside a timed op
  cudaDeviceProp prop{};
  TPB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index));
  d.sms = prop.multiProcessorCount;
  char bus[32] = {};
  TPB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device_index));
  d.pci = bus;
  TPB_CUDA_CHECK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));

  std::size_t free_b = 0, total_b = 0;
  TPB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  // What this rank may allocate: the budget asked for, but never more than is free now
  // (ranks sharing a GPU, or --inject mem_reserve, take the rest).
  d.budget = static_cast<double>(free_b);
  if (o.memory_budget_bytes > 0) d.budget = std::min(d.budget, o.memory_budget_bytes);
  d.free_at_open = static_cast<double>(free_b);
  d.asked = o.memory_budget_bytes;

  caps_.backend = "cuda";
  caps_.name = prop.name;
  caps_.dtypes = {DType::fp32, DType::bf16, DType::fp16};
  caps_.device_timer = true;
  caps_.device_memory = true;
  caps_.host_ranks = o.local_size;
  caps_.memory_bytes = std::max(0.0, d.budget - static_cast<double>(kLtWorkspaceBytes) -
                                         kCollectiveReserveBytes - kStepWorkspaceReserveBytes);
  caps_.llc_bytes = static_cast<double>(prop.l2CacheSize);
  caps_.llc_source = "cudaDeviceProp::l2CacheSize";
  caps_.fused_elementwise = true;  // add_rmsnorm and rope_kv_write are one kernel each
  caps_.fp8_gemm = prop.major * 10 + prop.minor >= 89;     // Ada and Hopper on: FP8 tensor cores
  if (caps_.fp8_gemm) caps_.dtypes.push_back(DType::fp8);  // weights; see dtype_refusal
  caps_.per_op_times = "cupti: kernel, memcpy and memset records, from the first op timed";

  d.lt_workspace = alloc(kLtWorkspaceBytes);
  d.gemm = std::make_unique<LtGemm>(d.stream, d.lt_workspace.get(), kLtWorkspaceBytes,
                                    [this] { synchronize(); });
  // cuBLAS shares cuBLASLt's workspace: both run on this one stream, so never at once. The
  // workspace goes after the stream (cublasSetStream resets it to cuBLAS's own pool, which
  // would allocate under graph capture).
  TPB_CUBLAS_CHECK(cublasCreate(&d.blas));
  TPB_CUBLAS_CHECK(cublasSetStream(d.blas, d.stream));
  TPB_CUBLAS_CHECK(cublasSetWorkspace(d.blas, d.lt_workspace.get(), kLtWorkspaceBytes));
  d.clock = std::make_unique<GpuClock>(d.stream);
  caps_.timer_resolution_s = d.clock->resolution_s();
  // Opened with the device, so a missing cuDNN is said before any point runs.
  d.attention = parse_attn_impl(o.attention, "--attention");
  if (d.attention == AttnImpl::cudnn) d.sdpa = std::make_unique<CudnnSdpa>(d.stream);
}

CudaDevice::~CudaDevice() {
  Impl& d = *impl_;
  if (d.capturing) {  // an exception left a capture open: end it so the stream works again
    cudaGraph_t g = nullptr;
    (void)cudaStreamEndCapture(d.stream, &g);
    if (g) (void)cudaGraphDestroy(g);
    (void)cudaGetLastError();
  }
  if (d.stream) {
    try {
      wait_stream(d.stream);  // the collective has gone (and aborted what it left): no hook
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tpbench: closing the cuda device: %s\n", e.what());
    }
  }
  if (d.graph) TPB_CUDA_CHECK_NOEXCEPT(cudaGraphExecDestroy(d.graph));
  // These free through this device, so they go while impl_ is still whole.
  d.gemm.reset();
  if (d.blas) TPB_CUBLAS_CHECK_NOEXCEPT(cublasDestroy(d.blas));
  d.clock.reset();
  d.decode_ws = DeviceBuffer();
  d.prefill_ws = DeviceBuffer();
  d.sdpa.reset();  // its plans and handle, before the stream they run on
  d.sdpa_ws = DeviceBuffer();
  d.fp8_x = DeviceBuffer();
  d.fp8_state = DeviceBuffer();
  d.varlen.reset();
  d.lt_workspace = DeviceBuffer();
  if (d.stream) TPB_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(d.stream));
}

DeviceBuffer CudaDevice::alloc(std::size_t bytes) {
  Impl& d = *impl_;
  if (bytes == 0) return DeviceBuffer();
  // Checked before cudaMalloc so an over-budget point fails the same way on every GPU size.
  if (d.used + static_cast<double>(bytes) > d.budget)
    throw DeviceOom("cuda alloc: out of memory: need " + gib(static_cast<double>(bytes)) +
                    ", have " + gib(d.budget - d.used) + " left of a budget of " + gib(d.budget) +
                    " on GPU " + std::to_string(d.index));
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: an allocation failure must not poison later calls
    std::size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    throw DeviceOom("cuda alloc: cudaMalloc(" + gib(static_cast<double>(bytes)) + ") failed (" +
                    cudaGetErrorString(e) + "): the GPU has " + gib(static_cast<double>(free_b)) +
                    " free of " + gib(static_cast<double>(total_b)));
  }
  d.sizes[p] = bytes;
  d.used += static_cast<double>(bytes);
  return DeviceBuffer(this, p, bytes);
}

// What others took since open = the free memory lost beyond this device's own allocations.
// NCCL's buffers count against --memory-budget as the model's do, so the budget shrinks by
// them as well as the memory left.
void CudaDevice::refresh_budget() {
  Impl& d = *impl_;
  std::size_t free_b = 0, total_b = 0;
  TPB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const double others = std::max(0.0, d.free_at_open - static_cast<double>(free_b) - d.used);
  double limit = d.free_at_open;
  if (d.asked > 0) limit = std::min(limit, d.asked);
  d.budget = std::max(0.0, limit - others);
  caps_.memory_bytes = std::max(0.0, d.budget - static_cast<double>(kLtWorkspaceBytes) -
                                         kCollectiveLateReserveBytes - kStepWorkspaceReserveBytes);
}

void CudaDevice::free_raw(void* p) noexcept {
  if (!p) return;
  Impl& d = *impl_;
  auto it = d.sizes.find(p);
  if (it != d.sizes.end()) {
    d.used -= static_cast<double>(it->second);
    d.sizes.erase(it);
  }
  TPB_CUDA_CHECK_NOEXCEPT(cudaFree(p));
}

void CudaDevice::upload(void* dst, const float* src, std::size_t count, DType t) {
  with_element_type(t, [&](auto v) {
    convert_upload<decltype(v)>(dst, src, count, impl_->stream, [this] { synchronize(); });
  });
}

void CudaDevice::download(float* dst, const void* src, std::size_t count, DType t) {
  with_element_type(t, [&](auto v) {
    convert_download<decltype(v)>(dst, src, count, impl_->stream, [this] { synchronize(); });
  });
}

void CudaDevice::fill(void* dst, DType t, const FillSpec& f) {
  TPB_ASSERT(f.rows >= 0 && f.cols >= 0 && f.dst_ld >= f.cols, "fill: bad FillSpec");
  cuda_kernels::launch_fill(plan_fill(f.rows, f.cols, t), impl_->stream, dst, t, f);
}

void CudaDevice::gemm(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
                      DType t) {
  impl_->gemm->run(x, w, y, m, n, k, t);
}

void CudaDevice::gemm_fp8(const void* x, const void* w, float w_scale, void* y, int64_t m,
                          int64_t n, int64_t k, DType act) {
  Impl& d = *impl_;
  if (!caps_.fp8_gemm)
    throw BadInput("--dtype: fp8 GEMMs need compute capability 8.9 or later (" + caps_.name + ")");
  if (m == 0 || n == 0) return;
  const std::array<KernelLaunch, 3> p = plan_gemm_fp8(m, n, k, act, d.sms);
  const auto elems = static_cast<std::size_t>(m * k);
  if (elems > d.fp8_x.bytes()) {
    TPB_ASSERT(!d.capturing, "gemm_fp8: workspace grown under graph capture (no warm-up)");
    regrow(d.fp8_x, elems);
  }
  if (!d.fp8_state.get()) {
    TPB_ASSERT(!d.capturing, "gemm_fp8: state made under graph capture (no warm-up)");
    d.fp8_state = alloc(sizeof(cuda_kernels::Fp8QuantState));
    TPB_CUDA_CHECK(cudaMemsetAsync(d.fp8_state.get(), 0, d.fp8_state.bytes(), d.stream));
  }
  auto* st = d.fp8_state.as<cuda_kernels::Fp8QuantState>();
  cuda_kernels::launch_fp8_amax(p[0], d.stream, x, m * k, act, st);
  cuda_kernels::launch_fp8_quant(p[1], d.stream, x, m * k, act, st, d.fp8_x.get());
  d.gemm->run_fp8(d.fp8_x.get(), w, y, m, n, k, act, w_scale, &st->scale);
}

void CudaDevice::rmsnorm(const void* x, const void* gamma, void* y, int64_t rows, int64_t dim,
                         float eps, DType t) {
  cuda_kernels::launch_rmsnorm(plan_rmsnorm(rows, dim, t), impl_->stream, x, gamma, y, rows, dim,
                               eps, t);
}

void CudaDevice::rope(void* qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
                      const AttnShape& s, float theta, DType t) {
  TPB_ASSERT(tokens_per_seq > 0, "rope: tokens_per_seq must be positive");
  cuda_kernels::launch_rope(plan_rope(tokens, s.q_heads, s.kv_heads, s.head_dim, t), impl_->stream,
                            qkv, tokens, tokens_per_seq, pos0, s, theta, t);
}

void CudaDevice::kv_write(const void* qkv, void* k_cache, void* v_cache, int64_t tokens_per_seq,
                          int64_t pos0, const AttnShape& s, DType t) {
  TPB_ASSERT(pos0 >= 0 && pos0 + tokens_per_seq <= s.max_ctx, "kv_write: past the cache end");
  cuda_kernels::launch_kv_write(plan_kv_write(s.batch * tokens_per_seq, s.kv_heads, s.head_dim, t),
                                impl_->stream, qkv, k_cache, v_cache, tokens_per_seq, pos0, s, t);
}

void CudaDevice::regrow(DeviceBuffer& b, std::size_t bytes) {
  TPB_ASSERT(!impl_->capturing, "a workspace grown under graph capture (no warm-up)");
  // cudaFree waits for the whole device inside the driver, past any collective timeout; once
  // this wait (which honours it) has drained the stream, it returns at once.
  synchronize();
  b = DeviceBuffer();
  b = alloc(bytes);
}

bool CudaDevice::sdpa_if_chosen(bool decode, int64_t len, const AttnShape& s, const void* qkv,
                                const void* k_cache, const void* v_cache, void* out, DType t) {
  TPB_ASSERT(len <= s.max_ctx, "attention: the context or prompt runs past the cache");
  Impl& d = *impl_;
  if (!sdpa_runs(d.attention, t)) return false;
  const SdpaLayout l =
      decode ? sdpa_decode_layout(s.batch, s.q_heads, s.kv_heads, s.head_dim, s.max_ctx, len)
             : sdpa_prefill_layout(s.batch, s.q_heads, s.kv_heads, s.head_dim, s.max_ctx, len);
  const int64_t ws = d.sdpa->workspace_bytes(l, t);  // builds the shape's graph the first time
  if (ws > static_cast<int64_t>(d.sdpa_ws.bytes())) {
    TPB_ASSERT(!d.capturing, "attention (cudnn): workspace grown under graph capture (no warm-up)");
    regrow(d.sdpa_ws, static_cast<std::size_t>(ws));
  }
  d.sdpa->run(l, t, qkv, k_cache, v_cache, out, ws > 0 ? d.sdpa_ws.get() : nullptr);
  return true;
}

void CudaDevice::attention_decode(const void* qkv, const void* k_cache, const void* v_cache,
                                  void* out, int64_t ctx_len, const AttnShape& s, DType t) {
  if (sdpa_if_chosen(true, ctx_len, s, qkv, k_cache, v_cache, out, t)) return;
  Impl& d = *impl_;
  const DecodePlan p =
      plan_attention_decode(s.batch, s.q_heads, s.kv_heads, s.head_dim, ctx_len, t, d.sms);
  if (p.workspace_bytes > static_cast<double>(d.decode_ws.bytes()))
    regrow(d.decode_ws, static_cast<std::size_t>(p.workspace_bytes));
  cuda_kernels::launch_attention_decode(p, d.stream, qkv, k_cache, v_cache, out,
                                        d.decode_ws.as<float>(), ctx_len, s, t);
}

void CudaDevice::attention_prefill(const void* qkv, const void* k_cache, const void* v_cache,
                                   void* out, int64_t seq, const AttnShape& s, DType t) {
  if (sdpa_if_chosen(false, seq, s, qkv, k_cache, v_cache, out, t)) return;
  Impl& d = *impl_;
  const PrefillPlan p = plan_attention_prefill(s.batch, s.q_heads, s.kv_heads, s.head_dim, seq, t);
  if (p.workspace_bytes > static_cast<double>(d.prefill_ws.bytes())) {
    TPB_ASSERT(!d.capturing, "attention_prefill: workspace grown under graph capture (no warm-up)");
    regrow(d.prefill_ws, static_cast<std::size_t>(p.workspace_bytes));
  }
  cuda_kernels::launch_attention_prefill(p, d.stream, d.blas, qkv, k_cache, v_cache, out,
                                         d.prefill_ws.as<float>(), seq, s, t);
}

void CudaDevice::swiglu(const void* gate_up, void* out, int64_t rows, int64_t inter, DType t) {
  cuda_kernels::launch_swiglu(plan_swiglu(rows, inter, t), impl_->stream, gate_up, out, rows, inter,
                              t);
}

void CudaDevice::add(void* x, const void* y, std::size_t count, DType t) {
  const auto n = static_cast<int64_t>(count);
  cuda_kernels::launch_add(plan_add(n, t), impl_->stream, x, y, n, t);
}

void CudaDevice::add_rmsnorm(void* x, const void* y, const void* gamma, void* xn, int64_t rows,
                             int64_t dim, float eps, DType t) {
  cuda_kernels::launch_add_rmsnorm(plan_add_rmsnorm(rows, dim, t), impl_->stream, x, y, gamma, xn,
                                   rows, dim, eps, t);
}

void CudaDevice::rope_kv_write(void* qkv, void* k_cache, void* v_cache, int64_t tokens,
                               int64_t tokens_per_seq, int64_t pos0, const AttnShape& s,
                               float theta, DType t) {
  // The fused kernel rotates and caches the same batch * tokens_per_seq rows; a call whose
  // rope covers other rows than its kv_write keeps the two ops' meaning by running them.
  if (tokens != s.batch * tokens_per_seq) {
    Device::rope_kv_write(qkv, k_cache, v_cache, tokens, tokens_per_seq, pos0, s, theta, t);
    return;
  }
  TPB_ASSERT(tokens_per_seq > 0, "rope_kv_write: tokens_per_seq must be positive");
  TPB_ASSERT(pos0 >= 0 && pos0 + tokens_per_seq <= s.max_ctx, "rope_kv_write: past the cache end");
  cuda_kernels::launch_rope_kv_write(
      plan_rope_kv_write(tokens, s.q_heads, s.kv_heads, s.head_dim, t), impl_->stream, qkv, k_cache,
      v_cache, tokens_per_seq, pos0, s, theta, t);
}

void CudaDevice::busy_work(double seconds) {
  if (seconds <= 0) return;
  // One warp per SM spinning on %globaltimer: the stream is held for `seconds` of wall time
  // and every SM reads busy, as a slower or contended rank would.
  cuda_kernels::launch_spin(impl_->stream, impl_->sms, static_cast<uint64_t>(seconds * 1e9));
}

void CudaDevice::begin_capture() {
  Impl& d = *impl_;
  TPB_ASSERT(!d.capturing, "begin_capture: already capturing");
  if (d.graph) {
    synchronize();
    TPB_CUDA_CHECK(cudaGraphExecDestroy(d.graph));
    d.graph = nullptr;
  }
  TPB_CUDA_CHECK(cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeThreadLocal));
  d.capturing = true;
  d.clock->set_capturing(true);
}

void CudaDevice::end_capture(std::size_t slots_per_replay) {
  Impl& d = *impl_;
  TPB_ASSERT(d.capturing, "end_capture without begin_capture");
  d.clock->capture_advance();  // the graph's last node: the next replay stamps fresh slots
  d.clock->set_capturing(false);
  cudaGraph_t g = nullptr;
  d.capturing = false;
  TPB_CUDA_CHECK(cudaStreamEndCapture(d.stream, &g));  // fails when the capture was invalidated
  const cudaError_t e = cudaGraphInstantiate(&d.graph, g, 0);
  if (g) TPB_CUDA_CHECK_NOEXCEPT(cudaGraphDestroy(g));
  TPB_CUDA_CHECK(e);
  // Upload, and replay once unmeasured: the first launch of a graph pays its upload and the
  // first use of its kernels; arm_replays then points replay 0's marks back at their slots.
  TPB_CUDA_CHECK(cudaGraphUpload(d.graph, d.stream));
  d.clock->arm_replays(slots_per_replay);
  TPB_CUDA_CHECK(cudaGraphLaunch(d.graph, d.stream));
  synchronize();
  d.clock->arm_replays(slots_per_replay);
}

void CudaDevice::release_graph() noexcept {
  Impl& d = *impl_;
  if (!d.graph) return;
  // No sync: after a collective timeout a replay may never finish; CUDA frees an executable
  // graph that is still running once it completes.
  TPB_CUDA_CHECK_NOEXCEPT(cudaGraphExecDestroy(d.graph));
  d.graph = nullptr;
}

void CudaDevice::replay() {
  Impl& d = *impl_;
  TPB_ASSERT(d.graph && !d.capturing, "replay without a captured graph");
  TPB_CUDA_CHECK(cudaGraphLaunch(d.graph, d.stream));
}

void CudaDevice::reserve_marks(std::size_t slots) {
  impl_->clock->reserve(slots);
  impl_->activity_slots.reserve(slots);
}
void CudaDevice::mark(std::size_t slot) {
  impl_->clock->mark(slot);
}
void CudaDevice::collect_marks(std::size_t first, std::size_t count, int64_t* host_ns) {
  impl_->clock->collect(first, count, host_ns);
}

void CudaDevice::activity_begin(std::size_t slot) {
  Impl& d = *impl_;
  if (!d.cupti && !d.cupti_tried && !d.capturing) {
    d.cupti_tried = true;
    std::string why;
    d.cupti = CuptiActivity::start(&why);
    if (!d.cupti) caps_.per_op_times = why;
  }
  if (!d.cupti) return;
  if (const uint64_t id = d.activity_slots.begin(slot)) d.cupti->push(id);
}

void CudaDevice::activity_end(std::size_t slot) {
  (void)slot;
  Impl& d = *impl_;
  if (d.cupti) d.cupti->pop();
}

bool CudaDevice::collect_activity(std::size_t first, std::size_t count, int64_t* host_ns,
                                  int64_t* launched_ns) {
  Impl& d = *impl_;
  if (!d.cupti) return false;
  d.cupti->collect(d.activity_slots, first, count, host_ns, launched_ns);
  return true;
}

// The device's one wait (cuda_wait.h): sync_poll throws CollectiveTimeout when a collective is
// stuck; the time this wait has waited lets it bound collectives it cannot see one by one
// (those inside a CUDA graph replay).
void CudaDevice::synchronize() {
  wait_stream(impl_->stream, impl_->sync_poll);
}

void* CudaDevice::stream() const {
  return impl_->stream;
}
int CudaDevice::device_index() const {
  return impl_->index;
}
int CudaDevice::sm_count() const {
  return impl_->sms;
}
bool CudaDevice::cudnn_attention(DType t) const {
  return sdpa_runs(impl_->attention, t);
}
CudaDevice::PagedAttentionUse CudaDevice::cudnn_paged_use() const {
  return impl_->paged;
}
PagedPadding CudaDevice::cudnn_paged_padding() const {
  return impl_->sdpa ? impl_->sdpa->paged_padding() : PagedPadding::none;
}
std::string CudaDevice::pci_bus_id() const {
  return impl_->pci;
}
std::string CudaDevice::gemm_algos() const {
  return impl_->gemm->algos(false);
}
void CudaDevice::tune_gemms(const std::function<void()>& gemms, const GroupGather& gather) {
  LtGemm& g = *impl_->gemm;
  g.begin_tuning();
  try {
    gemms();
  } catch (...) {
    g.abandon_tuning();
    throw;
  }
  g.end_tuning(gather);
}
namespace {

// The mixed-step attention line of kernel_choices, for the calls since `reported` (then moved
// up to `now`): launch/device_table.py reads a point whose line counts native calls as no
// cuDNN point. Empty when no mixed step ran since.
std::string report_paged_use(const CudaDevice::PagedAttentionUse& now,
                             CudaDevice::PagedAttentionUse& reported) {
  const int64_t cudnn = now.cudnn_calls - reported.cudnn_calls;
  const int64_t native = now.native_calls - reported.native_calls;
  reported = now;
  return cudnn == 0 && native == 0 ? "" : paged_use_line(cudnn, native, now.refused);
}

}  // namespace

std::vector<std::string> CudaDevice::kernel_choices() const {
  std::vector<std::string> out;
  if (impl_->sdpa) {
    const CudnnSdpa::Builds b = impl_->sdpa->builds();
    // The build's host seconds stay out: they differ between the ranks of a group, whose
    // kernel_choices must read alike (tests/tools/check_results.py).
    char built[160];
    std::snprintf(built, sizeof built,
                  "; %lld graph(s) built since the device opened, each inside the first step of "
                  "its shape",
                  static_cast<long long>(b.graphs));
    out.push_back(impl_->sdpa->describe() +
                  " for bf16 and fp16 prefill, decode and serve's mixed steps (paged, ragged) "
                  "where cuDNN builds the step's graph; native kernels for fp32" +
                  built);
    if (std::string mixed = report_paged_use(impl_->paged, impl_->paged_reported); !mixed.empty())
      out.push_back(std::move(mixed));
  } else {
    out.push_back("attention: native kernels (layers/cuda/kernels)");
  }
  std::istringstream lines(impl_->gemm->algos(true));
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}
double CudaDevice::mark_uncertainty_s() const {
  return impl_->clock->uncertainty_s();
}
void CudaDevice::calibrate_marks(bool point_start) {
  impl_->clock->calibrate_point(point_start);
}
void CudaDevice::set_sync_poll(std::function<void(double)> poll) {
  impl_->sync_poll = std::move(poll);
}

void CudaDevice::profiler_capture(bool on) {
  TPB_CUDA_CHECK(on ? cudaProfilerStart() : cudaProfilerStop());
}

void CudaDevice::range_push(const char* name) {
  nvtxRangePushA(name);
}

void CudaDevice::range_pop() {
  nvtxRangePop();
}

}  // namespace tpb
