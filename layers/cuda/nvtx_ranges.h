// NVTX ranges so Nsight Systems timelines show tpbench's steps and ops by name. Header-only
// (nvtx3 needs no library: without a profiler attached a range costs a few nanoseconds).
#pragma once
#include <nvtx3/nvToolsExt.h>

#include "layers/ops.h"

namespace tpb {

// Scoped range: pushed on construction, popped on destruction (same thread).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  explicit NvtxRange(Op op) : NvtxRange(op_name(op)) {}
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// A point-in-time marker, e.g. "warmup done".
inline void nvtx_mark(const char* message) {
  nvtxMarkA(message);
}

}  // namespace tpb
