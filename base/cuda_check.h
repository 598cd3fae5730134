// Check macros for the CUDA runtime, cuBLAS(Lt) and NCCL, built on TPB_CHECK_GEN so every
// failure names the expression, file and line and throws BackendError. The _NOEXCEPT variants
// only print, for destructors and other places that must not throw.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "base/errors.h"

namespace tpb::cuda_detail {

inline bool cuda_ok(cudaError_t e) {
  return e == cudaSuccess;
}
inline std::string cuda_detail(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

inline bool cublas_ok(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS;
}
inline std::string cublas_detail(cublasStatus_t s) {
  return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s);
}

}  // namespace tpb::cuda_detail

#define TPB_CUDA_CHECK(expr) \
  TPB_CHECK_GEN("cuda", expr, ::tpb::cuda_detail::cuda_ok, ::tpb::cuda_detail::cuda_detail)
#define TPB_CUBLAS_CHECK(expr) \
  TPB_CHECK_GEN("cublas", expr, ::tpb::cuda_detail::cublas_ok, ::tpb::cuda_detail::cublas_detail)

// Destructors run during unwinding; throwing there would terminate, so these only report.
#define TPB_NOEXCEPT_GEN(lib, expr, is_ok, detail_fn)                             \
  do {                                                                            \
    auto tpb_check_status_ = (expr);                                              \
    if (!(is_ok(tpb_check_status_)))                                              \
      std::fprintf(stderr, "%s error (ignored): %s -> %s at %s:%d\n", lib, #expr, \
                   detail_fn(tpb_check_status_).c_str(), __FILE__, __LINE__);     \
  } while (0)

#define TPB_CUDA_CHECK_NOEXCEPT(expr) \
  TPB_NOEXCEPT_GEN("cuda", expr, ::tpb::cuda_detail::cuda_ok, ::tpb::cuda_detail::cuda_detail)
#define TPB_CUBLAS_CHECK_NOEXCEPT(expr) \
  TPB_NOEXCEPT_GEN("cublas", expr, ::tpb::cuda_detail::cublas_ok, ::tpb::cuda_detail::cublas_detail)

// NCCL: the helpers are lambdas expanded at the use site, so this header does not need nccl.h
// (the MPI-free device check builds without it); include <nccl.h> before using these.
// ncclInProgress counts as ok: a non-blocking communicator returns it from every call, and
// completion is then polled through ncclCommGetAsyncError (collectives/nccl/nccl_collective.cc).
#define TPB_NCCL_OK_ [](ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }
#define TPB_NCCL_DETAIL_ [](ncclResult_t r) { return std::string(ncclGetErrorString(r)); }
#define TPB_NCCL_CHECK(expr) TPB_CHECK_GEN("nccl", expr, TPB_NCCL_OK_, TPB_NCCL_DETAIL_)
#define TPB_NCCL_CHECK_NOEXCEPT(expr) TPB_NOEXCEPT_GEN("nccl", expr, TPB_NCCL_OK_, TPB_NCCL_DETAIL_)
