// The CUDA backend's launch plan: for each kernel, its grid and block and the work its own
// loops do (FLOPs, bytes). CudaDevice launches with exactly these grids, and the unit test
// checks that a step's plan sums to the cost model's step_cost(). Host-only: no CUDA headers
// and no JSON, so it builds into the unit tests and the MPI-free GPU device check alike.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/base/dtype.h"
#include "layers/ops.h"

namespace tpb {

struct Dim3i {
  int64_t x = 1, y = 1, z = 1;
};

// Bytes follow the cost model's convention: every element a kernel's loops touch counts once
// (DRAM-ideal; re-reads served by L1/L2 are not counted).
struct KernelLaunch {
  Op op = Op::count;
  const char* kernel = "";
  Dim3i grid, block;
  int64_t smem_bytes = 0;  // dynamic shared memory
  double flops = 0;        // matmul-class FLOPs only (GEMMs, QK^T, PV), as in the cost model
  double bytes_read = 0;
  double bytes_written = 0;
  double scratch_bytes = 0;  // split-K partials written and read back; not in the cost model
  double comm_bytes = 0;     // collectives only: payload per rank
};

// Host-side tuning constants shared by the plan and the kernels.
inline constexpr int kElementwiseThreads = 256;
inline constexpr int kRmsnormThreads = 256;
inline constexpr int kDecodeThreads = 128;       // 4 warps per (sequence, KV head, split)
inline constexpr int kDecodeMaxGroup = 16;       // query heads per KV head (registers per thread)
inline constexpr int kDecodeScoreFloats = 8192;  // 32 KiB of scores in shared memory
inline constexpr int kDecodeMinChunk =
    64;  // positions per split, below which splitting stops paying
inline constexpr int kPrefillQueries = 32;   // queries per block
inline constexpr int kPrefillKeys = 32;      // keys per shared-memory tile
inline constexpr int kDefaultSmCount = 132;  // H100/H200 SXM; tests pass it explicitly

KernelLaunch plan_fill(int64_t rows, int64_t cols, DType t);
KernelLaunch plan_rmsnorm(int64_t rows, int64_t dim, DType t);
KernelLaunch plan_gemm(int64_t m, int64_t n, int64_t k, DType t);
KernelLaunch plan_rope(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                       DType t);
KernelLaunch plan_kv_write(int64_t tokens, int64_t kv_heads, int64_t head_dim, DType t);
KernelLaunch plan_swiglu(int64_t rows, int64_t inter, DType t);
KernelLaunch plan_add(int64_t count, DType t);

// Flash-decoding: one block per (split, KV head, sequence) scores all the query heads of its
// group against its chunk of positions, so each KV element is read from memory once. With
// more than one split a combine kernel merges the partial softmax states.
struct DecodePlan {
  KernelLaunch main;
  KernelLaunch combine;  // kernel == "" when splits == 1 (main then writes the output)
  int64_t splits = 1;
  int64_t chunk = 0;  // positions per split
  double workspace_bytes = 0;
};
DecodePlan plan_attention_decode(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                 int64_t ctx_len, DType t, int sm_count);

// Causal prefill: one block per (query tile, query head, sequence); keys beyond each query's
// position are outside the loop bounds, so FLOPs count the S(S+1)/2 causal pairs exactly.
KernelLaunch plan_attention_prefill(int64_t batch, int64_t q_heads, int64_t kv_heads,
                                    int64_t head_dim, int64_t seq, DType t);

// One TP transformer layer on one rank, as the step driver composes it.
struct LayerDims {
  bool prefill = false;
  int64_t batch = 1;
  int64_t tokens_per_seq = 1;  // 1 (decode) or the prompt length (prefill)
  int64_t ctx_len = 1;         // positions attention reads: context + 1 (decode), prompt (prefill)
  int64_t hidden = 0;
  int64_t q_heads = 0;   // local
  int64_t kv_heads = 0;  // local
  int64_t head_dim = 0;
  int64_t inter = 0;  // local MLP width
  int tp = 1;
  DType dtype = DType::bf16;
  int sm_count = kDefaultSmCount;
};

// Kernels (and, for tp > 1, the two all-reduces) of one layer, in launch order.
std::vector<KernelLaunch> layer_launch_plan(const LayerDims& d);

struct PlanTotals {
  double flops = 0, bytes_read = 0, bytes_written = 0, scratch_bytes = 0, comm_bytes = 0;
  int64_t launches = 0;  // kernels, not collectives
};
PlanTotals plan_totals(const std::vector<KernelLaunch>& plan);

}  // namespace tpb
