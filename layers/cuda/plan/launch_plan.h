// The CUDA backend's launch plan: for each kernel, its grid and block and the work its own
// loops do (FLOPs, bytes). CudaDevice launches with exactly these grids, and the unit test
// checks that a step's plan sums to the cost model's step_cost(). Host-only: no CUDA headers
// and no JSON, so it builds into the unit tests and the MPI-free GPU device check alike.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "base/dtype.h"
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
  double scratch_bytes = 0;  // workspaces written and read back (split-K partials, prefill
                             // scores and probabilities); not in the cost model
  double comm_bytes = 0;     // collectives only: payload per rank
  // Matmul FLOPs a kernel computes beyond `flops` and throws away: the causal mask's upper
  // triangle inside a prefill query tile. Kept apart so `flops` stays the cost model's count.
  double wasted_flops = 0;
  int64_t launches = 1;  // launches this record sums (prefill attention: one per tile and head set)
};

// Host-side tuning constants shared by the plan and the kernels.
inline constexpr int kElementwiseThreads = 256;
// The elementwise kernels (add, swiglu, rope, kv_write, rmsnorm and the fused pairs) move 16
// bytes a thread per access: one thread per 16-byte chunk of a row, vector_elems(t) elements.
inline constexpr int kVectorBytes = 16;
// RMSNorm: a warp per row for rows of at most 32 * kRmsnormChunks chunks (kRmsnormThreads / 32
// rows a block), else a block per row of the smallest power of two of threads, at most
// kRmsnormMaxThreads, that keeps each thread to kRmsnormChunks chunks, held in registers so
// the row is read once (bf16: rows up to 16384 elements; longer rows re-read the rest).
inline constexpr int kRmsnormThreads = 256;
inline constexpr int kRmsnormChunks = 4;
inline constexpr int kRmsnormMaxThreads = 512;
inline constexpr int kDecodeThreads = 128;       // 4 warps per (sequence, KV head, split)
inline constexpr int kDecodeMaxGroup = 16;       // query heads per KV head
inline constexpr int kDecodeScoreFloats = 8192;  // 32 KiB of scores in shared memory
// Positions per split, below which splitting stops paying: a split's partials (g heads of
// head_dim + 2 floats, written and read back) are 1/8 of its K/V bytes at 32 bf16 positions.
inline constexpr int kDecodeMinChunk = 32;
// Blocks per SM the split count aims for: 16 warps of 2 KiB of loads in flight each keep about
// 32 KiB per SM in flight, what HBM3e's latency-bandwidth product asks of each of 132 SMs.
inline constexpr int kDecodeBlocksPerSm = 4;
inline constexpr int kPrefillQueryTile = 256;    // queries per tile, halved to fit the workspace
inline constexpr int kPrefillMinQueryTile = 16;  // below this the plan refuses the shape
inline constexpr double kPrefillScoreBytes = 256.0 * (1u << 20);  // fp32 scores of one tile
inline constexpr int kPrefillSoftmaxThreads = 256;                // per (head, query row)
inline constexpr int kDefaultSmCount = 132;  // H100/H200 SXM; tests pass it explicitly

KernelLaunch plan_fill(int64_t rows, int64_t cols, DType t);
KernelLaunch plan_rmsnorm(int64_t rows, int64_t dim, DType t);
KernelLaunch plan_gemm(int64_t m, int64_t n, int64_t k, DType t);
KernelLaunch plan_rope(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                       DType t);
KernelLaunch plan_kv_write(int64_t tokens, int64_t kv_heads, int64_t head_dim, DType t);
KernelLaunch plan_swiglu(int64_t rows, int64_t inter, DType t);
KernelLaunch plan_add(int64_t count, DType t);
// Fused pairs (Device::add_rmsnorm, Device::rope_kv_write): one kernel each. The caller sets
// .op (the residual the add belongs to is the caller's to know).
KernelLaunch plan_add_rmsnorm(int64_t rows, int64_t dim, DType t);
KernelLaunch plan_rope_kv_write(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                DType t);
inline int64_t vector_elems(DType t) {
  return kVectorBytes / static_cast<int64_t>(dtype_bytes(t));
}

// FP8 GEMMs (Device::gemm_fp8; issue 30, item 5) as vLLM runs fp8 on an unquantised checkpoint:
// e4m3 weights with one scale per tensor, the bf16/fp16 input quantised per tensor on the fly
// with a dynamic scale (its absolute maximum over e4m3's largest finite value), and cuBLASLt's
// FP8 matmul writing the input's dtype. Three launches: the maximum, the quantisation (which
// publishes the scale and re-arms the maximum for the next GEMM), the matmul. Their bytes are
// the cost model's for the GEMM (x at `act`'s width and the weights at one byte read, y
// written); the quantised copy (written, read back) and the maximum's read of x are scratch.
inline constexpr float kFp8E4m3Max = 448.0f;
inline constexpr int kFp8QuantBlocksPerSm = 4;  // grid-stride: a grid that fills the GPU once
// A fixed array, not a vector: CudaDevice plans every FP8 GEMM of the timed loop with it.
std::array<KernelLaunch, 3> plan_gemm_fp8(int64_t m, int64_t n, int64_t k, DType act,
                                          int sm_count = kDefaultSmCount);

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
// The merge of split-K partial softmax states, shared by decode and the varlen kernel: one
// block per (row, query head) of head_dim threads reads its `splits` records [acc(head_dim),
// max, sum] and writes the output row in the storage dtype.
KernelLaunch plan_attention_combine(int64_t rows_x_heads, int64_t splits, int64_t head_dim,
                                    DType t);

// Causal prefill on tensor cores through cuBLAS, per sequence and tile of query_tile queries
// [q0, q1) against keys [0, q1): S = Q K^T / sqrt(d) into an fp32 workspace (strided-batched
// GEMMs), a causal softmax that overwrites S with P in the storage dtype, then O = P V written
// into the output rows. Keys past q1 are never computed; `flops` counts the S(S+1)/2 causal
// pairs as the cost model does, and each tile's masked triangle is `wasted_flops`.
struct PrefillPlan {
  KernelLaunch scores;   // QK^T GEMMs
  KernelLaunch softmax;  // in place over the workspace
  KernelLaunch values;   // PV GEMMs
  int64_t query_tile = 0;
  int64_t tiles = 0;  // per sequence
  // Heads per strided-batched GEMM: the group sharing one KV head (K/V batch stride 0) when
  // the group is at least as large as the KV head count, else one head of each group.
  int64_t gemm_batch = 0;
  bool batch_over_group = true;
  int64_t heads_per_pass = 0;  // heads whose scores share the workspace: one softmax launch
  double workspace_bytes = 0;  // <= kPrefillScoreBytes
};
PrefillPlan plan_attention_prefill(int64_t batch, int64_t q_heads, int64_t kv_heads,
                                   int64_t head_dim, int64_t seq, DType t);
// Leading dimension (floats) of a tile's score rows over `keys` keys: 32-byte rows keep every
// row (and the probabilities written over it) aligned for cuBLAS's vector loads.
inline int64_t prefill_score_ld(int64_t keys) {
  return (keys + 7) / 8 * 8;
}

// Which attention kernels run: tpbench's own (layers/cuda/kernels) or cuDNN's fused SDPA
// (sdpa_plan.h, where bf16 and fp16 run it).
enum class AttnImpl { native, cudnn };

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
  // One dtype for every kernel. Under fp8 each GEMM is one launch, the quantisation of its
  // input fused into the kernel before it as TensorRT-LLM runs FP8 (what the model backend
  // prices); the CUDA backend's own FP8 GEMMs quantise in two more launches (plan_gemm_fp8),
  // which this plan does not count.
  DType dtype = DType::bf16;
  int sm_count = kDefaultSmCount;
  // The kernels CudaDevice really launches where TpModel fuses (caps().fused_elementwise and no
  // per-op stamps, tp_model/tp_model.cc): add_rmsnorm for residual + norm, rope_kv_write for rope
  // + cache, and the MLP residual inside the next layer's norm (step_launch_plan adds the last
  // layer's). false: one kernel per op, the plan the cost-model test sums.
  bool fused = false;
  AttnImpl attention = AttnImpl::native;
  int64_t max_ctx = 0;  // the caches' positions per sequence (cuDNN's K and V batch stride)
};

// Kernels (and, for tp > 1, the two all-reduces) of one layer, in launch order.
std::vector<KernelLaunch> layer_launch_plan(const LayerDims& d);

struct PlanTotals {
  double flops = 0, bytes_read = 0, bytes_written = 0, scratch_bytes = 0, comm_bytes = 0;
  double wasted_flops = 0;
  int64_t launches = 0;  // kernels, not collectives
};
PlanTotals plan_totals(const std::vector<KernelLaunch>& plan);

}  // namespace tpb
