// cuBLASLt plans per GEMM shape. Row-major y = x w^T is, in cuBLAS's column-major terms,
// y^T (n x m) = w (stored k x n, transposed) * x^T (stored k x m): the "TN" layout that
// cuBLAS runs fastest, with no copies.
#include "layers/cuda/cuda_gemm.h"

#include <algorithm>
#include <array>
#include <sstream>

#include "base/cuda_check.h"
#include "layers/cuda/plan/gemm_choice.h"

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

// A check that every rank of the group was offered the same candidates (the same GPU model and
// cuBLASLt give the same list): below 2^24, so it travels exactly as a float.
float candidates_fingerprint(const std::vector<cublasLtMatmulHeuristicResult_t>& cand) {
  uint32_t h = static_cast<uint32_t>(cand.size());
  for (const auto& c : cand)
    for (auto attr : {CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID,
                      CUBLASLT_ALGO_CONFIG_STAGES_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM})
      h = h * 1000003u + static_cast<uint32_t>(config_attr(c.algo, attr) + 1);
  return static_cast<float>(h % (1u << 23));
}

std::string us(double s) {
  std::ostringstream os;
  os << s * 1e6 << " us";
  return os.str();
}

}  // namespace

LtGemm::LtGemm(cudaStream_t stream, void* workspace, std::size_t workspace_bytes,
               std::function<void()> wait)
    : stream_(stream),
      workspace_(workspace),
      workspace_bytes_(workspace_bytes),
      wait_(std::move(wait)) {
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

std::vector<double> LtGemm::time_candidates(const Plan& p, const void* x, const void* w, void* y) {
  const std::size_t n = p.cand.size();
  std::vector<double> med(n, -1.0);
  std::vector<cudaEvent_t> ev(2 * kTimedLaunches, nullptr);
  for (cudaEvent_t& e : ev) TPB_CUDA_CHECK(cudaEventCreate(&e));
  const float alpha = 1.0f, beta = 0.0f;  // an FP8 plan's scale is already set on p.op
  for (std::size_t i = 0; i < n; ++i) {
    if (p.cand[i].workspaceSize > workspace_bytes_) continue;
    auto launch = [&] {
      return cublasLtMatmul(lt_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c,
                            &p.cand[i].algo, workspace_, workspace_bytes_, stream_);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate may refuse these operands
    for (int r = 0; r < kTimedLaunches; ++r) {
      TPB_CUDA_CHECK(cudaEventRecord(ev[2 * r], stream_));
      TPB_CUBLAS_CHECK(launch());
      TPB_CUDA_CHECK(cudaEventRecord(ev[2 * r + 1], stream_));
    }
    wait_();  // one wait per candidate, through the device's (it honours the collective's timeout)
    std::vector<double> ts;
    for (int r = 0; r < kTimedLaunches; ++r) {
      float ms = 0;
      TPB_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]));
      ts.push_back(ms * 1e-3);
    }
    std::sort(ts.begin(), ts.end());
    med[i] = ts[ts.size() / 2];
  }
  for (cudaEvent_t e : ev) TPB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e));
  return med;
}

LtGemm::Plan& LtGemm::descriptors(const Key& key, const float* x_scale) {
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
  p.cand.assign(cand, cand + found);
  return plans_.emplace(key, std::move(p)).first->second;
}

void LtGemm::set_choice(const Key& key, Plan& p, const cublasLtMatmulHeuristicResult_t& result,
                        int best, const std::vector<double>& times, const std::string& how) {
  const auto [m, n, k, t, out] = key;
  p.algo = result.algo;
  p.chosen = true;
  std::ostringstream os;
  os << dtype_name(t) << (t == out ? "" : std::string("->") + dtype_name(out)) << " m=" << m
     << " n=" << n << " k=" << k << ": algo " << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_ID)
     << " tile " << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_TILE_ID) << " stages "
     << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID) << " splitk "
     << config_attr(p.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) << " waves " << result.wavesCount
     << " workspace " << result.workspaceSize << "; " << how;
  const double tb = static_cast<std::size_t>(best) < times.size() ? times[best] : -1.0;
  if (times.size() > 1 && tb > 0) {
    os << " (#" << best << ", " << us(tb);
    if (times[0] > 0) os << " vs the heuristic's first " << us(times[0]);
    os << ")";
  }
  p.desc = os.str();
}

void LtGemm::choose_alone(const Key& key, Plan& p, const void* x, const void* w, void* y) {
  const auto [m, n, k, t, out] = key;
  // The kernel the group agreed for this weight at the nearest tuned row count, where cuBLASLt
  // accepts it for these rows: the same on every rank, and nothing timed inside a step.
  std::vector<int64_t> tuned;
  for (const auto& [q, o] : plans_)
    if (o.agreed && std::get<1>(q) == n && std::get<2>(q) == k && std::get<3>(q) == t &&
        std::get<4>(q) == out)
      tuned.push_back(std::get<0>(q));
  if (!tuned.empty()) {
    const int64_t from = tuned_rows_for(m, tuned);
    const Plan& src = plans_.at(Key{from, n, k, t, out});
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(lt_, p.op, p.a, p.b, p.c, p.c, &src.algo, &check) ==
            CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= workspace_bytes_) {
      check.algo = src.algo;
      set_choice(key, p, check, 0, {}, "the group's kernel for m=" + std::to_string(from));
      return;
    }
  }
  // No tuning pass covered this weight (the unsharded --check reference, calibrate, the layer
  // check): timed on this rank alone, as before issue 54. Never inside a graph capture.
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPB_CUDA_CHECK(cudaStreamIsCapturing(stream_, &cap));
  const bool timed = p.cand.size() > 1 && cap == cudaStreamCaptureStatusNone;
  const std::vector<double> med =
      timed ? time_candidates(p, x, w, y) : std::vector<double>(p.cand.size(), -1.0);
  const int best = std::max(0, fastest_candidate(med));
  set_choice(key, p, p.cand[static_cast<std::size_t>(best)], best, med,
             timed ? "fastest of " + std::to_string(med.size()) +
                         " candidates timed on this rank alone (no tuning pass)"
                   : "the heuristic's first (no tuning pass)");
}

void LtGemm::begin_tuning() {
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  TPB_CUDA_CHECK(cudaStreamIsCapturing(stream_, &cap));
  TPB_ASSERT(cap == cudaStreamCaptureStatusNone, "gemm tuning under graph capture");
  tuning_ = true;
  pending_.clear();
}

void LtGemm::end_tuning(const GroupGather& gather) {
  tuning_ = false;
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  if (pending.empty()) return;  // every rank's pass met no GEMM: nothing to gather
  // Per shape: the candidates' fingerprint, then kCandidates times in us (-1: none).
  constexpr std::size_t kStride = 1 + kCandidates;
  std::vector<float> mine;
  for (const Pending& q : pending) {
    mine.push_back(candidates_fingerprint(plans_.at(q.key).cand));
    for (int i = 0; i < kCandidates; ++i)
      mine.push_back(i < static_cast<int>(q.times.size()) && q.times[i] > 0
                         ? static_cast<float>(q.times[i] * 1e6)
                         : -1.0f);
  }
  const std::vector<float> all = gather ? gather(mine) : mine;
  TPB_ASSERT(!all.empty() && all.size() % mine.size() == 0, "gemm tuning: a short gather");
  const std::size_t ranks = all.size() / mine.size();
  for (std::size_t j = 0; j < pending.size(); ++j) {
    Plan& p = plans_.at(pending[j].key);
    std::vector<std::vector<double>> per_rank(ranks, std::vector<double>(kCandidates));
    bool same = true;
    for (std::size_t r = 0; r < ranks; ++r) {
      const float* v = all.data() + r * mine.size() + j * kStride;
      same = same && v[0] == mine[j * kStride];
      for (int i = 0; i < kCandidates; ++i) per_rank[r][i] = v[1 + i] * 1e-6;
    }
    const int best = same ? agreed_candidate(per_rank) : -1;
    std::vector<double> group(p.cand.size());
    for (std::size_t i = 0; i < group.size(); ++i)
      group[i] = group_time(per_rank, static_cast<int>(i));
    const std::string of = " of " + std::to_string(ranks) + " rank(s)";
    if (best >= 0)
      set_choice(pending[j].key, p, p.cand[static_cast<std::size_t>(best)], best, group,
                 "fastest of " + std::to_string(p.cand.size()) + " candidates by the slowest" + of +
                     " (agreed before the steps)");
    else
      set_choice(pending[j].key, p, p.cand[0], 0, {},
                 "the heuristic's first: the ranks" + of +
                     (same ? " ran no candidate alike" : " were offered different candidates"));
    p.agreed = true;
  }
  // Shapes chosen outside a pass for a weight the pass has now tuned choose again, from it.
  for (auto& [key, p] : plans_)
    if (!p.agreed)
      for (const Pending& q : pending)
        if (std::get<1>(q.key) == std::get<1>(key) && std::get<2>(q.key) == std::get<2>(key) &&
            std::get<3>(q.key) == std::get<3>(key) && std::get<4>(q.key) == std::get<4>(key))
          p.chosen = false;
}

void LtGemm::execute(const Key& key, const void* x, const void* w, void* y, const float* x_scale,
                     float alpha) {
  Plan& p = descriptors(key, x_scale);
  if (x_scale) set_attr(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof(x_scale));
  if (tuning_) {
    for (const Pending& q : pending_)
      if (q.key == key) return;  // timed once per pass
    pending_.push_back({key, time_candidates(p, x, w, y)});
    return;
  }
  if (!p.chosen) choose_alone(key, p, x, w, y);
  launch(p, x, w, y, alpha);
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
  execute(Key{m, n, k, t, t}, x, w, y, nullptr, 1.0f);
}

void LtGemm::run_fp8(const void* xq, const void* w, void* y, int64_t m, int64_t n, int64_t k,
                     DType out, float alpha, const float* x_scale) {
  if (m == 0 || n == 0) return;
  TPB_ASSERT(out == DType::bf16 || out == DType::fp16, "run_fp8: bf16 or fp16 output");
  execute(Key{m, n, k, DType::fp8, out}, xq, w, y, x_scale, alpha);
}

std::string LtGemm::algos(bool agreed_only) const {
  std::string s;
  for (const auto& [key, p] : plans_)
    if (p.chosen && (p.agreed || !agreed_only)) s += p.desc + "\n";
  return s;
}

}  // namespace tpb
