// cuBLASLt GEMM for the row-major y[m,n] = x[m,k] w[n,k]^T of Device::gemm, fp32 accumulate.
// Once per (m, n, k, dtype), the first call times the heuristic's top candidates on its own
// operands and keeps the fastest (the heuristic's first pick is often not it for the skinny
// decode shapes), so the timed loop only launches; each choice is recorded in words.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/dtype.h"

namespace tpb {

class LtGemm {
 public:
  LtGemm(cudaStream_t stream, void* workspace, std::size_t workspace_bytes);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void run(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k, DType t);
  // FP8 (Hopper and Ada): y[m,n] (`out`: bf16 or fp16) = alpha * (*x_scale) * xq[m,k] w[n,k]^T,
  // xq and w e4m3 (the weights' per-tensor scale is alpha; x_scale is a device float, written
  // by the quantisation before it), fp32 accumulation in the tensor cores' fast mode, as FP8
  // serving runs it.
  void run_fp8(const void* xq, const void* w, void* y, int64_t m, int64_t n, int64_t k, DType out,
               float alpha, const float* x_scale);

  // One line per shape: "bf16 m=1 n=6144 k=4096: algo 66 tile 20 stages 19 splitk 1 ...".
  std::string algos() const;

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    std::string desc;
  };
  // m, n, k, the operands' dtype (fp8 for run_fp8), the output's.
  using Key = std::tuple<int64_t, int64_t, int64_t, DType, DType>;
  // x, w, y: the first call's operands, which the candidates are timed on (y is overwritten);
  // x_scale: an FP8 plan's input scale (nullptr otherwise).
  Plan& plan_for(const Key& key, const void* x, const void* w, void* y, const float* x_scale);
  // The candidates' median times over a few launches each, in seconds (-1: it failed to run).
  std::vector<double> time_candidates(const Plan& p, const cublasLtMatmulHeuristicResult_t* c,
                                      int n, const void* x, const void* w, void* y);
  void launch(const Plan& p, const void* x, const void* w, void* y, float alpha);

  cudaStream_t stream_;
  void* workspace_;
  std::size_t workspace_bytes_;
  cublasLtHandle_t lt_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace tpb
