// poll_until (poll_wait.h) on CUDA work: every wait of the cuda backend goes through these two,
// never through cudaStreamSynchronize or cudaEventSynchronize, which block in the driver past
// any collective timeout (tests/unit/test_one_wait.cc scans layers/cuda for them).
#pragma once
#include <cuda_runtime.h>

#include <functional>

#include "base/cuda_check.h"
#include "layers/cuda/poll_wait.h"

namespace tpb {

// True when a query says the work finished; false while it runs; throws on an error.
inline bool cuda_work_done(cudaError_t e) {
  if (e == cudaSuccess) return true;
  if (e != cudaErrorNotReady) TPB_CUDA_CHECK(e);
  return false;
}

// Everything queued on `s` so far has finished. `hook`: the collective's (CudaDevice's
// sync_poll), or empty where the stream holds none of a collective's work.
inline void wait_stream(cudaStream_t s, const std::function<void(double)>& hook = {}) {
  poll_until([s] { return cuda_work_done(cudaStreamQuery(s)); }, hook);
}

// The work before `e` was recorded has finished.
inline void wait_event(cudaEvent_t e, const std::function<void(double)>& hook = {}) {
  poll_until([e] { return cuda_work_done(cudaEventQuery(e)); }, hook);
}

}  // namespace tpb
