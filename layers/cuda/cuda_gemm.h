// cuBLASLt GEMM for the row-major y[m,n] = x[m,k] w[n,k]^T of Device::gemm, fp32 accumulate.
// The heuristic's first pick is often not the fastest for the skinny decode shapes, so its top
// candidates are timed, in a tuning pass before the measured steps (CudaDevice::tune_gemms):
// every rank times them on its operands, the times are gathered over the TP group, and every
// rank keeps the same candidate (plan/gemm_choice.h), so no rank runs a kernel of its own and
// no step times anything. A shape the pass missed takes the kernel agreed for the nearest
// tuned row count of its weight; one with none is timed on its rank alone (the unsharded
// --check reference, calibrate). Each choice is recorded in words.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/dtype.h"
#include "layers/device.h"

namespace tpb {

class LtGemm {
 public:
  // wait: the device's one wait (CudaDevice::synchronize), for the candidates' timing.
  LtGemm(cudaStream_t stream, void* workspace, std::size_t workspace_bytes,
         std::function<void()> wait);
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

  // Between begin_tuning and end_tuning, run and run_fp8 time their shape's candidates on
  // their operands (once per shape, whether or not it has a plan) and launch nothing else;
  // end_tuning gathers every shape's times over the group and keeps, on every rank, the
  // candidate agreed_candidate picks. Every rank of the group must run the same pass.
  void begin_tuning();
  void end_tuning(const GroupGather& gather);
  void abandon_tuning() { tuning_ = false, pending_.clear(); }

  // One line per shape: "bf16 m=1 n=6144 k=4096: algo 66 tile 20 stages 19 splitk 1 ...".
  // agreed_only: the shapes a tuning pass chose for the group (the same lines on every rank).
  std::string algos(bool agreed_only) const;

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    std::vector<cublasLtMatmulHeuristicResult_t> cand;  // the heuristic's, best first
    cublasLtMatmulAlgo_t algo{};
    bool chosen = false;  // algo is set
    bool agreed = false;  // by a tuning pass, for the group
    std::string desc;
  };
  // m, n, k, the operands' dtype (fp8 for run_fp8), the output's.
  using Key = std::tuple<int64_t, int64_t, int64_t, DType, DType>;
  struct Pending {
    Key key;
    std::vector<double> times;  // this rank's, per candidate
  };
  // The shape's descriptors and candidates, made on first use; x_scale: an FP8 plan's input
  // scale (nullptr otherwise).
  Plan& descriptors(const Key& key, const float* x_scale);
  // x, w, y: the operands the candidates may be timed on (y is overwritten).
  void execute(const Key& key, const void* x, const void* w, void* y, const float* x_scale,
               float alpha);
  // A shape first met outside a tuning pass (cuda_gemm.h's header comment).
  void choose_alone(const Key& key, Plan& p, const void* x, const void* w, void* y);
  // The candidates' median times over a few launches each, in seconds (-1: it failed to run).
  std::vector<double> time_candidates(const Plan& p, const void* x, const void* w, void* y);
  // result: the candidate kept (best: its index among the timed, times: theirs).
  void set_choice(const Key& key, Plan& p, const cublasLtMatmulHeuristicResult_t& result, int best,
                  const std::vector<double>& times, const std::string& how);
  void launch(const Plan& p, const void* x, const void* w, void* y, float alpha);

  cudaStream_t stream_;
  void* workspace_;
  std::size_t workspace_bytes_;
  std::function<void()> wait_;
  cublasLtHandle_t lt_ = nullptr;
  std::map<Key, Plan> plans_;
  bool tuning_ = false;
  std::vector<Pending> pending_;  // the pass's shapes, in the order met (the same on every rank)
};

}  // namespace tpb
