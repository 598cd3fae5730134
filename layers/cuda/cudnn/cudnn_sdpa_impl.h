// CudnnSdpa's state, shared by its two sources: cudnn_sdpa.cc (the dense graphs of run's
// prefill and decode) and cudnn_sdpa_paged.cc (the paged graphs of serve's mixed steps).
// Included by those only.
#pragma once
#include <cudnn_frontend.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "layers/cuda/cudnn/cudnn_sdpa.h"

namespace tpb {

using CudnnGraph = std::shared_ptr<cudnn_frontend::graph::Graph>;

// Throws BackendError("cudnn sdpa: <what>: <cuDNN's message>") when `e` is an error.
void cudnn_check(cudnn_frontend::error_t e, const char* what);
// The frontend's type of bf16 and fp16 (the only ones its SDPA takes here).
cudnn_frontend::DataType_t cudnn_io_type(DType t);
// Throws BackendError unless cuDNN's SDPA runs `t` (bf16 and fp16).
void cudnn_require_dtype(DType t);
// Checks a built graph against the handle, makes its plans (heuristics mode A's first
// supported one) and builds them: the steps every graph of this backend ends with.
void cudnn_finish_graph(cudnn_frontend::graph::Graph& g, cudnnHandle_t h);

// `build()`'s graph, its host time counted in `b`.
template <class F>
CudnnGraph timed_build(CudnnSdpa::Builds& b, F build) {
  const auto t0 = std::chrono::steady_clock::now();
  CudnnGraph g = build();
  b.graphs += 1;
  b.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return g;
}

struct CudnnSdpa::Impl {
  cudnnHandle_t handle = nullptr;
  std::map<std::vector<int64_t>, CudnnGraph> graphs, paged_graphs;
  Builds built;

  const cudnn_frontend::graph::Graph& graph(const SdpaLayout& l, DType t);
  const cudnn_frontend::graph::Graph& paged_graph(const SdpaPagedLayout& l, DType t);
};

}  // namespace tpb
