// The CUDA backend's mixed (serving) steps, host side: the step's batch packed into the int32
// arrays its kernels index (per token its sequence and position, per sequence its first row,
// length and block table), and the grids and work of the varlen kernels. Host-only, like
// launch_plan.h, so the packing and the plans are unit-tested without a GPU.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/cuda/plan/launch_plan.h"
#include "layers/step_batch.h"

namespace tpb {

// One int32 array, uploaded whole: [token_seq | token_pos | seq_row0 | seq_len | seq_table0 |
// tables], each part at its offset (in elements). token_pos is the position a new token
// takes (cached + j); seq_len is cached + new_tokens, the positions its last token sees;
// tables holds every sequence's block table, sequence after sequence, at seq_table0.
struct VarlenMeta {
  int64_t tokens = 0, seqs = 0;
  int64_t block_tokens = 0;
  int64_t max_len = 0;  // the longest seq_len
  int64_t token_seq = 0, token_pos = 0, seq_row0 = 0, seq_len = 0, seq_table0 = 0, tables = 0;
  std::vector<int32_t> data;
};

// Throws BadInput when a position or a block does not fit int32, or a block table is short.
VarlenMeta pack_varlen(const StepBatch& b, int64_t block_tokens);
// `v` as the int32 the kernels index with; throws BadInput("mixed step: <what> ...") when it
// does not fit.
int32_t narrow_int32(int64_t v, const char* what);
// The first `need` blocks of s's table to dst; throws BadInput for a negative block.
void copy_blocks(const SeqSlice& s, int64_t need, int32_t* dst);

// The attention work of a mixed step as the cost model's mixed_attention counts it, whichever
// kernel runs it: 4d FLOPs per (query head, position) pair, K and V of each sequence read
// once, Q read and the output written once (op, flops and bytes set; no kernel or grid).
KernelLaunch mixed_attention_work(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                  int64_t head_dim, DType t);

// Rope and KV writes over the step's tokens: the fixed kernels' grids, one thread per pair or
// element, positions read from token_pos.
KernelLaunch plan_rope_varlen(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                              DType t);
KernelLaunch plan_kv_write_varlen(int64_t tokens, int64_t kv_heads, int64_t head_dim, DType t);

// Paged causal attention: one block per (new token, KV head, split) scores the token's g =
// q_heads / kv_heads query heads against its split's positions of [0, token_pos] in tiles of
// kVarlenTile, with an online softmax. A step of few tokens (decode rows) would give the GPU
// tokens x kv_heads blocks, 8 for one Llama-3-8B sequence against 132 SMs, so the positions
// are split as flash-decoding splits them: enough splits for kDecodeBlocksPerSm blocks per SM,
// none under a tile; the splits' partial states are merged by plan_attention_combine's kernel.
// A split past a short sequence's end writes an empty state (max -inf, sum 0).
// A step whose sequences all decode one token runs the decode kernel instead
// (attention_decode_paged_kernel, decode_kernel true): plan_attention_decode's grid of (split,
// KV head, sequence) and its chunks, sized for the longest sequence, each block reading its
// rows through the block table and stopping at its own sequence's length. The varlen kernel
// reads a position's K row a warp at a time and its V row a thread per element, one position
// after another; the decode kernel's 16-byte loads, several rows in flight per lane, are the
// ones run's decode steps measure.
// Work: mixed_attention_work's (the blocks of one sequence's tokens share its K and V through
// L2); the partials are scratch_bytes.
inline constexpr int kVarlenThreads = 128;  // 4 warps
inline constexpr int kVarlenTile = 64;      // positions per shared-memory tile
struct VarlenAttnPlan {
  KernelLaunch main;
  KernelLaunch combine;  // kernel == "" when splits == 1 (main then writes the output)
  int64_t splits = 1;
  // Positions per split: a multiple of kVarlenTile (varlen kernel) or of 32 (decode kernel).
  int64_t chunk = 0;
  double workspace_bytes = 0;
  bool decode_kernel = false;  // every sequence decodes one token: the paged decode kernel
};
VarlenAttnPlan plan_attention_varlen(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                     int64_t head_dim, DType t, int sm_count);

// Greedy sampling's local half: one block per row finds the largest logit and its lowest
// column; the (max, column) pairs are copied to the host.
inline constexpr int kArgmaxThreads = 256;
KernelLaunch plan_row_argmax(int64_t rows, int64_t cols, DType t);

}  // namespace tpb
