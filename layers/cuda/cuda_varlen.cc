// CudaDevice's mixed-step ops (tpbench serve): the batch packed once per step (varlen_plan.h)
// and the varlen kernels, or cuDNN's paged attention under --attention cudnn
// (sdpa_paged_plan.h), and greedy sampling's local argmax.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "base/cuda_check.h"
#include "base/errors.h"
#include "layers/cuda/cuda_device_impl.h"
#include "layers/cuda/cuda_wait.h"
#include "layers/cuda/kernels/kernels.h"
#include "layers/cuda/plan/sdpa_paged_plan.h"
#include "layers/cuda/plan/varlen_plan.h"

namespace tpb {

namespace {

// Made on the first mixed-step op or argmax.
CudaVarlenState& varlen_state(std::unique_ptr<CudaVarlenState>& v) {
  if (!v) v = std::make_unique<CudaVarlenState>();
  return *v;
}

}  // namespace

Int32Upload::~Int32Upload() {
  if (copied) TPB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(copied));
  if (pinned) TPB_CUDA_CHECK_NOEXCEPT(cudaFreeHost(pinned));
}

CudaVarlenState::~CudaVarlenState() {
  if (argmax_host) TPB_CUDA_CHECK_NOEXCEPT(cudaFreeHost(argmax_host));
}

// Stream-ordered after the previous step's kernels that read the old copy.
const int32_t* CudaDevice::upload_int32(Int32Upload& u, const std::vector<int32_t>& data) {
  Impl& d = *impl_;
  TPB_ASSERT(!d.capturing, "mixed steps are not captured in CUDA graphs");
  if (data == u.uploaded && u.dev.get()) return u.dev.as<int32_t>();
  if (!u.copied) TPB_CUDA_CHECK(cudaEventCreateWithFlags(&u.copied, cudaEventDisableTiming));
  const std::size_t n = data.size(), bytes = n * sizeof(int32_t);
  // The previous upload may still be reading the staging buffer.
  wait_event(u.copied, d.sync_poll);
  if (n > u.pinned_n) {
    if (u.pinned) synchronize();  // cudaFreeHost would wait for the device, past any timeout
    if (u.pinned) TPB_CUDA_CHECK(cudaFreeHost(u.pinned));
    u.pinned = nullptr;
    const std::size_t cap = std::max<std::size_t>(n, 2 * u.pinned_n);
    TPB_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&u.pinned), cap * sizeof(int32_t)));
    u.pinned_n = cap;
  }
  if (bytes > u.dev.bytes()) regrow(u.dev, u.pinned_n * sizeof(int32_t));
  std::memcpy(u.pinned, data.data(), bytes);
  TPB_CUDA_CHECK(cudaMemcpyAsync(u.dev.get(), u.pinned, bytes, cudaMemcpyHostToDevice, d.stream));
  TPB_CUDA_CHECK(cudaEventRecord(u.copied, d.stream));
  u.uploaded = data;
  return u.dev.as<int32_t>();
}

// The device copy of b's packed form. The rows of one step go through every layer with the same
// batch, so the upload happens when the packed data differs from what the device holds (the
// first op of a step).
const int32_t* CudaDevice::varlen_meta(const StepBatch& b, int64_t block_tokens, VarlenMeta& m) {
  m = pack_varlen(b, block_tokens);
  return upload_int32(varlen_state(impl_->varlen).meta, m.data);
}

void CudaDevice::rope_varlen(void* qkv, const StepBatch& b, const AttnShape& s, float theta,
                             DType t) {
  // Rope reads positions only, which do not depend on the block size; packing with the size
  // the KV ops last used keeps one upload per step (a sequence's whole length in one block
  // before any KV op has run).
  Impl& d = *impl_;
  int64_t bt = d.varlen && d.varlen->block_tokens > 0 ? d.varlen->block_tokens : 0;
  if (bt == 0)
    for (const SeqSlice& q : b.seqs) bt = std::max(bt, q.cached + q.new_tokens);
  VarlenMeta m;
  const int32_t* meta = varlen_meta(b, std::max<int64_t>(bt, 1), m);
  cuda_kernels::launch_rope_varlen(plan_rope_varlen(m.tokens, s.q_heads, s.kv_heads, s.head_dim, t),
                                   d.stream, qkv, meta, m, s, theta, t);
}

void CudaDevice::kv_write_varlen(const void* qkv, void* k_cache, void* v_cache, const StepBatch& b,
                                 const KvLayout& kv, const AttnShape& s, DType t) {
  VarlenMeta m;
  const int32_t* meta = varlen_meta(b, kv.block_tokens, m);
  impl_->varlen->block_tokens = kv.block_tokens;
  cuda_kernels::launch_kv_write_varlen(plan_kv_write_varlen(m.tokens, s.kv_heads, s.head_dim, t),
                                       impl_->stream, qkv, k_cache, v_cache, meta, m, s, t);
}

void CudaDevice::attention_varlen(const void* qkv, const void* k_cache, const void* v_cache,
                                  void* out, const StepBatch& b, const KvLayout& kv,
                                  const AttnShape& s, DType t) {
  Impl& d = *impl_;
  if (sdpa_runs(d.attention, t)) {
    const bool ran = attention_varlen_sdpa(qkv, k_cache, v_cache, out, b, kv, s, t);
    (ran ? d.paged.cudnn_calls : d.paged.native_calls) += 1;  // per call, never sticky
    if (ran) return;
  }
  VarlenMeta m;
  const int32_t* meta = varlen_meta(b, kv.block_tokens, m);
  CudaVarlenState& v = *d.varlen;
  v.block_tokens = kv.block_tokens;
  const VarlenAttnPlan p = plan_attention_varlen(b, s.q_heads, s.kv_heads, s.head_dim, t, d.sms);
  if (p.workspace_bytes > static_cast<double>(v.partials.bytes()))
    regrow(v.partials, static_cast<std::size_t>(p.workspace_bytes));
  if (p.decode_kernel)
    cuda_kernels::launch_attention_decode_paged(p, d.stream, qkv, k_cache, v_cache, out,
                                                v.partials.as<float>(), meta, m, s, t);
  else
    cuda_kernels::launch_attention_varlen(p, d.stream, qkv, k_cache, v_cache, out,
                                          v.partials.as<float>(), meta, m, s, t);
}

// Every sequence of the step in one cuDNN call, decode rows and prompt chunks alike, as `run`
// under --attention cudnn runs its decode and prefill attention; its graph is built on the
// first step of each bucketed shape (sdpa_paged_plan.h: serve's warm-up runs one step of each
// shape its run will plan). False, with the first reason kept, when cuDNN refuses that shape:
// the caller runs the native kernels for this step; other shapes still try cuDNN.
bool CudaDevice::attention_varlen_sdpa(const void* qkv, const void* k_cache, const void* v_cache,
                                       void* out, const StepBatch& b, const KvLayout& kv,
                                       const AttnShape& s, DType t) {
  Impl& d = *impl_;
  CudaVarlenState& v = varlen_state(d.varlen);
  v.block_tokens = kv.block_tokens;
  const SdpaPagedLayout l =
      sdpa_paged_layout(b, s.q_heads, s.kv_heads, s.head_dim, kv, d.sdpa->paged_padding());
  const SdpaPagedMeta m = pack_sdpa_paged(b, l);
  const int32_t* meta = upload_int32(v.sdpa, m.data);
  int64_t ws = 0;
  try {
    ws = d.sdpa->paged_workspace_bytes(l, t);  // builds the shape's graph once
  } catch (const BackendError& e) {
    if (d.paged.refused.empty()) d.paged.refused = e.what();
    return false;
  }
  if (ws > static_cast<int64_t>(d.sdpa_ws.bytes())) {
    regrow(d.sdpa_ws, static_cast<std::size_t>(ws));  // regrow waits: kernels may read the old one
  }
  d.sdpa->run_paged(l, m, t, qkv, k_cache, v_cache, out, meta, ws > 0 ? d.sdpa_ws.get() : nullptr);
  return true;
}

void CudaDevice::row_argmax(const void* logits, int64_t rows, int64_t cols, float* max_host,
                            int32_t* col_host, DType t) {
  if (rows <= 0) return;
  Impl& d = *impl_;
  CudaVarlenState& v = varlen_state(d.varlen);
  const auto n = static_cast<std::size_t>(rows);
  const std::size_t bytes = n * (sizeof(float) + sizeof(int32_t));
  if (n > v.argmax_rows) {
    regrow(v.argmax, bytes);  // waits for the device: cudaFreeHost below then returns at once
    if (v.argmax_host) TPB_CUDA_CHECK(cudaFreeHost(v.argmax_host));
    v.argmax_host = nullptr;
    TPB_CUDA_CHECK(cudaMallocHost(&v.argmax_host, bytes));
    v.argmax_rows = n;
  }
  auto* max_d = v.argmax.as<float>();
  auto* col_d = reinterpret_cast<int32_t*>(max_d + n);
  cuda_kernels::launch_row_argmax(plan_row_argmax(rows, cols, t), d.stream, logits, cols, max_d,
                                  col_d, t);
  TPB_CUDA_CHECK(cudaMemcpyAsync(v.argmax_host, max_d, bytes, cudaMemcpyDeviceToHost, d.stream));
  synchronize();  // the caller reads the host copy next
  const auto* host_max = static_cast<const float*>(v.argmax_host);
  std::memcpy(max_host, host_max, n * sizeof(float));
  std::memcpy(col_host, host_max + n, n * sizeof(int32_t));
}

}  // namespace tpb
