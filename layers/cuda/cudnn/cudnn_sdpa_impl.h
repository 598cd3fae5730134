// CudnnSdpa's state, shared by its two sources: cudnn_sdpa.cc (the dense graphs of run's
// prefill and decode) and cudnn_sdpa_paged.cc (the paged graphs of serve's mixed steps).
// Included by those only.
#pragma once
#include <cudnn_frontend.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
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
// A graph of `t` inputs and outputs with float intermediates and compute, as every SDPA graph
// of this backend (and cuDNN's own samples) sets it.
CudnnGraph new_sdpa_graph(DType t);
// A tensor of `g` with x's dims and strides (elements, [B, H, S, D]) and the id `uid`.
std::shared_ptr<cudnn_frontend::graph::Tensor_attributes> cudnn_tensor(
    cudnn_frontend::graph::Graph& g, const char* name, int64_t uid, const SdpaTensor& x);
std::vector<int64_t> cudnn_dims(const std::array<int64_t, 4>& a);
// Marks `o` as the graph's output `uid` with x's dims and strides.
void cudnn_output(cudnn_frontend::graph::Tensor_attributes& o, int64_t uid, const SdpaTensor& x);
// Appends x's dims and strides to a graph's cache key.
void append_key(std::vector<int64_t>& key, const SdpaTensor& x);
// Checks a built graph against the handle, makes its plans (heuristics mode A's first
// supported one) and builds them: the steps every graph of this backend ends with.
void cudnn_finish_graph(cudnn_frontend::graph::Graph& g, cudnnHandle_t h);

using CudnnGraphCache = std::map<std::vector<int64_t>, CudnnGraph>;

// The graph `cache` holds under `key`, built by `build()` the first time (its host time and
// count added to `b`).
template <class F>
const cudnn_frontend::graph::Graph& cached_graph(CudnnGraphCache& cache, std::vector<int64_t> key,
                                                 CudnnSdpa::Builds& b, F build) {
  auto it = cache.find(key);
  if (it == cache.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    it = cache.emplace(std::move(key), build()).first;
    b.graphs += 1;
    b.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return *it->second;
}

struct CudnnSdpa::Impl {
  cudnnHandle_t handle = nullptr;
  CudnnGraphCache graphs, paged_graphs;
  // cuDNN's message for each paged shape it refused: not rebuilt (seconds each) at every step.
  std::map<std::vector<int64_t>, std::string> paged_refusals;
  Builds built;

  const cudnn_frontend::graph::Graph& graph(const SdpaLayout& l, DType t);
  const cudnn_frontend::graph::Graph& paged_graph(const SdpaPagedLayout& l, DType t);
};

}  // namespace tpb
