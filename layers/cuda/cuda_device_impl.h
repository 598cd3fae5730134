// CudaDevice's state, shared by its two sources: cuda_device.cc (memory, fixed-step ops,
// graphs, marks) and cuda_varlen.cc (the mixed steps of tpbench serve). Included by those only.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "layers/cuda/activity/activity_join.h"
#include "layers/cuda/activity/cupti_activity.h"
#include "layers/cuda/cuda_clock.h"
#include "layers/cuda/cuda_device.h"
#include "layers/cuda/cuda_gemm.h"
#include "layers/cuda/cudnn/cudnn_sdpa.h"

namespace tpb {

// An int32 array the kernels of a mixed step read, uploaded from pinned staging on the stream
// when it differs from what the device holds: the first op of a step uploads it, the layers
// after it reuse it (CudaDevice::upload_int32).
struct Int32Upload {
  Int32Upload() = default;
  Int32Upload(const Int32Upload&) = delete;
  Int32Upload& operator=(const Int32Upload&) = delete;
  ~Int32Upload();  // frees the pinned staging and the event
  DeviceBuffer dev;
  std::vector<int32_t> uploaded;  // the data `dev` holds
  int32_t* pinned = nullptr;      // staging for the upload
  std::size_t pinned_n = 0;
  cudaEvent_t copied = nullptr;  // the last upload has read `pinned`
};

// Mixed steps: the step's packed batch (varlen_plan.h) and, under --attention cudnn, cuDNN's
// per-step arrays (sdpa_paged_plan.h) on the device; the argmax results of sampling.
struct CudaVarlenState {
  CudaVarlenState() = default;
  CudaVarlenState(const CudaVarlenState&) = delete;
  CudaVarlenState& operator=(const CudaVarlenState&) = delete;
  ~CudaVarlenState();           // frees the argmax's pinned buffer
  Int32Upload meta;             // VarlenMeta::data
  Int32Upload sdpa;             // SdpaPagedMeta::data
  DeviceBuffer argmax;          // [rows] float maxima, then [rows] int32 columns
  void* argmax_host = nullptr;  // pinned, the same layout
  std::size_t argmax_rows = 0;
  int64_t block_tokens = 0;  // the KV ops' block size, last seen (rope packs with it)
  DeviceBuffer partials;     // attention's split-K partial states, grown as steps need
};

struct CudaDevice::Impl {
  int index = 0;
  cudaStream_t stream = nullptr;
  int sms = 0;
  std::string pci;
  double budget = 0;
  double used = 0;
  // At open, before this device allocated anything: the free memory, and the budget asked for
  // (0: none), so refresh_budget can tell what others (NCCL) took since.
  double free_at_open = 0, asked = 0;
  std::unordered_map<void*, std::size_t> sizes;
  DeviceBuffer lt_workspace;
  std::unique_ptr<LtGemm> gemm;
  std::unique_ptr<GpuClock> clock;
  DeviceBuffer decode_ws;                 // split-K partials, grown on first use (a warm-up step)
  cublasHandle_t blas = nullptr;          // prefill attention's batched GEMMs, on `stream`
  DeviceBuffer prefill_ws;                // its fp32 scores, grown like decode_ws
  AttnImpl attention = AttnImpl::native;  // --attention
  std::unique_ptr<CudnnSdpa> sdpa;        // --attention cudnn: made when the device opens
  DeviceBuffer sdpa_ws;                   // its workspace, grown like decode_ws
  // Serve's mixed-step attention under --attention cudnn: which kernels each call ran (a step
  // whose shape cuDNN refused, an older cuDNN or an unsupported shape, runs the native ones),
  // since the device opened and at kernel_choices' last report, which tells the difference.
  CudaDevice::PagedAttentionUse paged, paged_reported;
  DeviceBuffer fp8_x;                       // gemm_fp8's quantised input, grown like decode_ws
  DeviceBuffer fp8_state;                   // its cuda_kernels::Fp8QuantState, zeroed once
  std::unique_ptr<CudaVarlenState> varlen;  // mixed steps (cuda_varlen.cc), made on first use
  std::function<void(double)> sync_poll;
  bool capturing = false;
  cudaGraphExec_t graph = nullptr;
  // Per-op times under --stamps collectives (activity_begin): CUPTI, started at the first op
  // timed that way, outside graph capture; `cupti_tried` keeps a failed start from retrying.
  std::unique_ptr<CuptiActivity> cupti;
  bool cupti_tried = false;
  ActivitySlots activity_slots;
};

}  // namespace tpb
