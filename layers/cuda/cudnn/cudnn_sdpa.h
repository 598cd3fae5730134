// cuDNN's fused scaled-dot-product attention on the device's stream (`--attention cudnn`):
// tpbench's own buffers as SdpaLayout views them (layers/cuda/plan/sdpa_plan.h), nothing
// copied. The frontend (cudnn-frontend, header-only, fetched by launch/deps.sh) loads cuDNN 9
// at run time, so a binary built here starts where cuDNN is absent and says so only when asked
// for this attention. Built without the frontend, the constructor refuses in one line.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/dtype.h"
#include "layers/cuda/plan/sdpa_paged_plan.h"
#include "layers/cuda/plan/sdpa_plan.h"

namespace tpb {

class CudnnSdpa {
 public:
  // Loads libcudnn.so.9 and creates a handle bound to `stream`. Throws BackendError naming the
  // library when it cannot be loaded (LD_LIBRARY_PATH must reach it: the toolkit's lib/, or
  // the nvidia-cudnn wheel's nvidia/cudnn/lib beside PyTorch). First points the frontend at
  // the CUDA runtime this binary links (frontend_cudart.h).
  explicit CudnnSdpa(cudaStream_t stream);
  ~CudnnSdpa();  // neither copied nor moved: the handle is bound to one stream (impl_)

  // The workspace one call of this shape needs. The shape's graph is built (and its support
  // checked) on first use and kept: throws BackendError with cuDNN's message when no engine
  // runs it. Call it before a timed or captured step, so building is never inside one.
  int64_t workspace_bytes(const SdpaLayout& l, DType t);
  // One call on the stream: q, k, v, o as the layout says, `workspace` at least
  // workspace_bytes(l, t) bytes (or null when that is 0).
  void run(const SdpaLayout& l, DType t, const void* q, const void* k, const void* v, void* o,
           void* workspace);
  // The paged form for serve's mixed steps (sdpa_paged_plan.h), graphs built and kept the same
  // way, one per bucketed shape; a shape cuDNN refused throws its reason again, unbuilt.
  // `meta` is the device copy of pack_sdpa_paged's data for this step, `m` its host form (the
  // offsets of its parts).
  int64_t paged_workspace_bytes(const SdpaPagedLayout& l, DType t);
  void run_paged(const SdpaPagedLayout& l, const SdpaPagedMeta& m, DType t, const void* qkv,
                 const void* k_cache, const void* v_cache, void* o, const int32_t* meta,
                 void* workspace);
  // Whether the loaded cuDNN runs paged graphs padded with empty sequences (9.25 on):
  // sdpa_paged_layout's `pad`.
  PagedPadding paged_padding() const;
  // "cuDNN 9.19.0 SDPA (frontend 1.32.0)": what kernel_choices records.
  std::string describe() const;
  // The graphs built so far and the host seconds building them took: a build happens inside
  // the first step of each new shape, so kernel_choices reports them.
  struct Builds {
    int64_t graphs = 0;
    double seconds = 0;
  };
  Builds builds() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tpb
