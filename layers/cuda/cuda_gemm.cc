// cuBLASLt plans per GEMM shape. Row-major y = x w^T is, in cuBLAS's column-major terms,
// y^T (n x m) = w (stored k x n, transposed) * x^T (stored k x m): the "TN" layout that
// cuBLAS runs fastest, with no copies.
#include "layers/cuda/cuda_gemm.h"

#include <algorithm>
#include <array>
#include <sstream>

#include "base/cuda_check.h"

namespace tpb {
namespace {

constexpr uint32_t kMinAlignment = 16;
constexpr int kCandidates = 8;     // the heuristic's top picks timed per shape
constexpr int kTimedLaunches = 5;  // per candidate, after one untimed launch

// In DType's order: fp32, bf16, fp16, fp8 (e4m3, the operands of run_fp8 only).
cudaDataType_t cuda_type(DType t) {
  static constexpr std::array<cudaDataType_t, 4> kTypes{CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F,
                                                        CUDA_R_8F_E4M3};
  return kTypes.at(static_cast<std::size_t>(t));
}

void set_attr(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attr, const void* v,
              std::size_t bytes) {
  TPB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attr, v, bytes));
}

int config_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  int v = -1;  // some attributes are 16-bit; an int holds each
  std::size_t written = 0;
  uint32_t raw = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &raw, sizeof(raw), &written) ==
      CUBLAS_STATUS_SUCCESS)
    v = static_cast<int>(written == 2 ? (raw & 0xffffu) : raw);
  return v;
}

}  // namespace

LtGemm::LtGemm(cudaStream_t stream, void* workspace, std::size_t workspace_bytes)
    : stream_(stream), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  TPB_CUBLAS_CHECK(cublasLtCreate(&lt_));
}

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    TPB_CUBLAS_CHECK_NOEXCEPT(cublasLtMatrixLayoutDestroy(p.a));
    TPB_CUBLAS_CHECK_NOEXCEPT(cublasLtMatrixLayoutDestroy(p.b));
    TPB_CUBLAS_CHECK_NOEXCEPT(cublasLtMatrixLayoutDestroy(p.c));
    TPB_CUBLAS_CHECK_NOEXCEPT(cublasLtMatmulDescDestroy(p.op));
  }
  if (lt_) TPB_CUBLAS_CHECK_NOEXCEPT(cublasLtDestroy(lt_));
}

std::vector<double> LtGemm::time_candidates(const Plan& p, const cublasLtMatmulHeuristicResult_t* c,
                                            int n, const void* x, const void* w, void* y) {
  std::vector<double> med(static_cast<std::size_t>(n), -1.0);
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  TPB_CUDA_CHECK(cudaEventCreate(&e0));
  TPB_CUDA_CHECK(cudaEventCreate(&e1));
  const float alpha = 1.0f, beta = 0.0f;  // an FP8 plan's scale is already set on p.op
  for (int i = 0; i < n; ++i) {
    if (c[i].workspaceSize > workspace_bytes_) continue;
    auto launch = [&] {
      return cublasLtMatmul(lt_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &c[i].algo,
                            workspace_, workspace_bytes_, stream_);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate may refuse these operands
    std::vector<double> ts;
    for (int r = 0; r < kTimedLaunches; ++r) {
      TPB_CUDA_CHECK(cudaEventRecord(e0, stream_));
      TPB_CUBLAS_CHECK(launch());
      TPB_CUDA_CHECK(cudaEventRecord(e1, stream_));
      TPB_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      ts.push_back(ms * 1e-3);
    }
    std::sort(ts.begin(), ts.end());
    med[static_cast<std::size_t>(i)] = ts[ts.size() / 2];
  }
  TPB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e0));
  TPB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e1));
  return med;
}

LtGemm::Plan& LtGemm::plan_for(const Key& key, const void* x, const void* w, void* y,
                               const float* x_scale) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  const auto [m, n, k, t, out] = key;
  const cudaDataType_t ty = cuda_type(t), ty_out = cuda_type(out);
  Plan p;
  // fp32 accumulate for every dtype; CUBLAS_COMPUTE_32F (not _FAST_TF32) keeps fp32 GEMMs
  // exact enough to compare with the CPU reference.
  TPB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // The "TN" layout below is also the one FP8 matmuls require (A transposed, B not).
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  set_attr(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a));
  set_attr(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b));
  if (t == DType::fp8) {
    const int8_t fast = 1;
    set_attr(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast));
    set_attr(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof(x_scale));
  }
  TPB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, ty, k, n, k));      // w as stored
  TPB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, ty, k, m, k));      // x as stored
  TPB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, ty_out, n, m, n));  // y as stored

  cublasLtMatmulPreference_t pref = nullptr;
  TPB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = workspace_bytes_;
  TPB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  // The heuristic otherwise assumes 256-byte-aligned operands; asking for kernels that need
  // only 16 bytes keeps a plan valid for any sub-buffer a caller passes (run() checks it).
  const uint32_t align = kMinAlignment;
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    TPB_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
  cublasLtMatmulHeuristicResult_t cand[kCandidates]{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.a, p.b, p.c, p.c, pref,
                                                           kCandidates, cand, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  TPB_CUBLAS_CHECK(st);
  if (found == 0)
    throw BackendError("cublasLt: no algorithm for " + std::string(dtype_name(t)) + " m=" +
                       std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  // Timing launches work on the stream: never inside a graph capture (the warm-up step that
  // precedes a capture has made every plan by then).
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPB_CUDA_CHECK(cudaStreamIsCapturing(stream_, &cap));
  const std::vector<double> med = found > 1 && cap == cudaStreamCaptureStatusNone
                                      ? time_candidates(p, cand, found, x, w, y)
                                      : std::vector<double>(static_cast<std::size_t>(found), -1.0);
  int best = 0;
  for (int i = 1; i < found; ++i)
    if (med[static_cast<std::size_t>(i)] > 0 &&
        (med[static_cast<std::size_t>(best)] <= 0 ||
         med[static_cast<std::size_t>(i)] < med[static_cast<std::size_t>(best)]))
      best = i;
  const cublasLtMatmulHeuristicResult_t& result = cand[best];
  p.algo = result.algo;

  std::ostringstream os;
  os << dtype_name(t) << (t == out ? "" : std::string("->") + dtype_name(out)) << " m=" << m
     << " n=" << n << " k=" << k << ": algo " << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_ID)
     << " tile " << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_TILE_ID) << " stages "
     << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID) << " splitk "
     << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) << " waves " << result.wavesCount
     << " workspace " << result.workspaceSize;
  if (found > 1 && med[static_cast<std::size_t>(best)] > 0) {
    os << "; fastest of " << found << " timed candidates (#" << best << ", "
       << med[static_cast<std::size_t>(best)] * 1e6 << " us";
    if (med[0] > 0) os << " vs the heuristic's first " << med[0] * 1e6 << " us";
    os << ")";
  }
  p.desc = os.str();
  return plans_.emplace(key, p).first->second;
}

void LtGemm::launch(const Plan& p, const void* x, const void* w, void* y, float alpha) {
  for (const void* ptr : {x, w, static_cast<const void*>(y)})
    TPB_ASSERT(reinterpret_cast<uintptr_t>(ptr) % kMinAlignment == 0,
               "gemm operands must be 16-byte aligned");
  const float beta = 0.0f;
  TPB_CUBLAS_CHECK(cublasLtMatmul(lt_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo,
                                  workspace_, workspace_bytes_, stream_));
}

void LtGemm::run(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k, DType t) {
  if (m == 0 || n == 0) return;
  if (t == DType::fp8)
    throw BadInput("--dtype: an fp8 GEMM takes bf16 or fp16 inputs (Device::gemm_fp8)");
  launch(plan_for(Key{m, n, k, t, t}, x, w, y, nullptr), x, w, y, 1.0f);
}

void LtGemm::run_fp8(const void* xq, const void* w, void* y, int64_t m, int64_t n, int64_t k,
                     DType out, float alpha, const float* x_scale) {
  if (m == 0 || n == 0) return;
  TPB_ASSERT(out == DType::bf16 || out == DType::fp16, "run_fp8: bf16 or fp16 output");
  Plan& p = plan_for(Key{m, n, k, DType::fp8, out}, xq, w, y, x_scale);
  set_attr(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof(x_scale));
  launch(p, xq, w, y, alpha);
}

std::string LtGemm::algos() const {
  std::string s;
  for (const auto& [key, p] : plans_) s += p.desc + "\n";
  return s;
}

}  // namespace tpb
