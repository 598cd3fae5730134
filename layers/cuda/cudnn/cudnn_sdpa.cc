// Each shape's graph: Q, K, V and O with their strides, one SDPA node (no stats: inference),
// float intermediate and compute, heuristics mode A's first supported plan, as cuDNN's own
// samples and PyTorch's cuDNN attention build it.
#include "layers/cuda/cudnn/cudnn_sdpa.h"

#include <dlfcn.h>

#include <string>
#include <vector>

#include "base/errors.h"
#include "layers/cuda/cudnn/cudnn_sdpa_impl.h"
#include "layers/cuda/cudnn/frontend_cudart.h"

// The frontend's run-time loading (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) reads the library
// handle from this name, which it declares extern and leaves to the program to define: the
// library's contract, the one global of the CUDA backend.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace tpb {
namespace fe = cudnn_frontend;

void cudnn_check(fe::error_t e, const char* what) {
  if (e.is_bad()) throw BackendError(std::string("cudnn sdpa: ") + what + ": " + e.get_message());
}

fe::DataType_t cudnn_io_type(DType t) {
  return t == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

void cudnn_require_dtype(DType t) {
  if (!sdpa_runs(AttnImpl::cudnn, t))
    throw BackendError(std::string("cudnn sdpa: no ") + dtype_name(t) + " (bf16 and fp16 only)");
}

CudnnGraph new_sdpa_graph(DType t) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(cudnn_io_type(t))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

std::vector<int64_t> cudnn_dims(const std::array<int64_t, 4>& a) {
  return {a.begin(), a.end()};
}

std::shared_ptr<fe::graph::Tensor_attributes> cudnn_tensor(fe::graph::Graph& g, const char* name,
                                                           int64_t uid, const SdpaTensor& x) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(cudnn_dims(x.dim))
                      .set_stride(cudnn_dims(x.stride)));
}

void cudnn_output(fe::graph::Tensor_attributes& o, int64_t uid, const SdpaTensor& x) {
  o.set_output(true).set_uid(uid).set_dim(cudnn_dims(x.dim)).set_stride(cudnn_dims(x.stride));
}

void append_key(std::vector<int64_t>& key, const SdpaTensor& x) {
  key.insert(key.end(), x.dim.begin(), x.dim.end());
  key.insert(key.end(), x.stride.begin(), x.stride.end());
}

void cudnn_finish_graph(fe::graph::Graph& g, cudnnHandle_t h) {
  cudnn_check(g.validate(), "validate");
  cudnn_check(g.build_operation_graph(h), "build_operation_graph");
  cudnn_check(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
  cudnn_check(g.check_support(h), "check_support");
  cudnn_check(g.build_plans(h), "build_plans");
}

namespace {

constexpr int64_t kQ = 1, kK = 2, kV = 3, kO = 4;

// Everything a graph is built from, as one ordered key.
std::vector<int64_t> shape_key(const SdpaLayout& l, DType t) {
  std::vector<int64_t> k = {static_cast<int64_t>(t), l.causal ? 1 : 0};
  for (const SdpaTensor* x : {&l.q, &l.k, &l.v, &l.o}) append_key(k, *x);
  return k;
}

CudnnGraph build_graph(const SdpaLayout& l, DType t, cudnnHandle_t h) {
  CudnnGraph g = new_sdpa_graph(t);
  auto in = [&](const char* name, int64_t uid, const SdpaTensor& x) {
    return cudnn_tensor(*g, name, uid, x);
  };
  auto q = in("Q", kQ, l.q), k = in("K", kK, l.k), v = in("V", kV, l.v);
  auto opts =
      fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(false).set_attn_scale(
          l.scale);
  if (l.causal)
    opts.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
  auto outs = g->sdpa(q, k, v, opts);
  cudnn_output(*outs[0], kO, l.o);
  cudnn_finish_graph(*g, h);
  return g;
}

}  // namespace

const fe::graph::Graph& CudnnSdpa::Impl::graph(const SdpaLayout& l, DType t) {
  cudnn_require_dtype(t);
  return cached_graph(graphs, shape_key(l, t), built, [&] { return build_graph(l, t, handle); });
}

CudnnSdpa::CudnnSdpa(cudaStream_t stream) : impl_(std::make_unique<Impl>()) {
  // Before the frontend's first runtime call, which loads its libcudart once per process.
  Dl_info linked{};
  pin_frontend_cudart(
      dladdr(reinterpret_cast<void*>(&cudaRuntimeGetVersion), &linked) ? linked.dli_fname : nullptr,
      CUDART_VERSION);
  if (!fe::cudnn_dlhandle) {
    fe::cudnn_dlhandle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    if (!fe::cudnn_dlhandle)
      throw BackendError(std::string("--attention cudnn: cannot load libcudnn.so.9 (") + dlerror() +
                         "); put cuDNN 9's lib folder on LD_LIBRARY_PATH (the toolkit's, or "
                         "the nvidia-cudnn wheel's nvidia/cudnn/lib)");
  }
  if (const cudnnStatus_t st = fe::detail::create_handle(&impl_->handle);
      st != CUDNN_STATUS_SUCCESS)
    throw BackendError("--attention cudnn: cudnnCreate failed (status " +
                       std::to_string(static_cast<int>(st)) + ")");
  if (const cudnnStatus_t st = fe::detail::set_stream(impl_->handle, stream);
      st != CUDNN_STATUS_SUCCESS)
    throw BackendError("--attention cudnn: cudnnSetStream failed (status " +
                       std::to_string(static_cast<int>(st)) + ")");
}

CudnnSdpa::~CudnnSdpa() {
  impl_->graphs.clear();  // plans before the handle they were built on
  impl_->paged_graphs.clear();
  if (impl_->handle) (void)fe::detail::destroy_handle(impl_->handle);
}

int64_t CudnnSdpa::workspace_bytes(const SdpaLayout& l, DType t) {
  int64_t bytes = 0;
  cudnn_check(impl_->graph(l, t).get_workspace_size(bytes), "get_workspace_size");
  return bytes;
}

void CudnnSdpa::run(const SdpaLayout& l, DType t, const void* q, const void* k, const void* v,
                    void* o, void* workspace) {
  std::unordered_map<int64_t, void*> ptrs = {
      {kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)}, {kO, o}};
  cudnn_check(impl_->graph(l, t).execute(impl_->handle, ptrs, workspace), "execute");
}

CudnnSdpa::Builds CudnnSdpa::builds() const {
  return impl_->built;
}

std::string CudnnSdpa::describe() const {
  const std::size_t v = fe::detail::get_backend_version();
  const auto n = [](auto x) { return std::to_string(x); };
  return "attention: cuDNN " + n(v / 10000) + "." + n(v % 10000 / 100) + "." + n(v % 100) +
         " fused SDPA (cudnn-frontend " + n(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
         n(CUDNN_FRONTEND_MINOR_VERSION) + "." + n(CUDNN_FRONTEND_PATCH_VERSION) + ")";
}

}  // namespace tpb
