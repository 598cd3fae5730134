// cuDNN's fused attention over the paged cache, for the mixed steps of tpbench serve
// (`--attention cudnn`), as FlashInfer's cuDNN prefill and TensorRT-LLM run a serving batch:
// one call for every sequence of the step. The new tokens' queries are read in place from the
// qkv rows (ragged: each sequence's first row by offset), K and V through the sequences' block
// tables, and the causal mask is aligned to the bottom right of each sequence's own lengths,
// so that new token j of a sequence with `cached` positions sees [0, cached + j]: a decode row
// sees its whole context (a decode-only step takes no mask), a prompt chunk its cached part and
// itself causally.
// Host only, as the rest of the launch plan: the graph's shape, the int32 arrays it reads per
// step, and the work the plan counts.
#pragma once
#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "layers/cuda/plan/launch_plan.h"
#include "layers/cuda/plan/sdpa_plan.h"
#include "layers/step_batch.h"

namespace tpb {

// Whether a graph's batch may be padded with sequences of no tokens and no positions. cuDNN
// runs those only from 9.25 (cudnn-frontend's tests skip zero-length sequences below it: NaN
// rows on 9.22, execution errors on 9.4); below it the batch is the step's own, so every
// sequence cuDNN sees has seq_len_q >= 1 and seq_len_kv >= 1. Padding with one-token
// sequences instead was no option: each would write a row per head past the step's rows,
// outside the output `att` (sized for the token budget), or race a real row if pointed at one.
enum class PagedPadding { none, empty_sequences };
// The padding a loaded cuDNN runs (cudnnGetVersion(): 91500 is 9.15.0).
PagedPadding paged_padding_for(int64_t cudnn_version);

// One call's graph. A cuDNN graph is built for fixed dims (seconds of host time the first
// time, heuristics and kernel compilation), so the dims that vary from step to step are
// rounded up to a power of two: tokens per sequence and blocks always, sequences where
// `PagedPadding::empty_sequences` allows (else their exact number: up to max_seqs shapes, which
// serve builds in its warm-up). Padding sequences have no tokens and no positions; the kernel
// skips them.
struct SdpaPagedLayout {
  // q and o: the rows as [batch, heads, s_q, head_dim], each sequence placed by its ragged
  // offset; k and v: the paged cache as [num_blocks, kv_heads, block_tokens, head_dim].
  SdpaTensor q, k, v, o;
  int64_t batch = 0;  // sequences: the step's, rounded up to a power of two where padded
  int64_t s_q = 0;    // tokens per sequence: the most new tokens of one, rounded up
  int64_t pages = 0;  // block-table width: the longest table, rounded up
  int64_t block_tokens = 0;
  float scale = 0;  // 1 / sqrt(head_dim)
};

// Throws BadInput("attention: ...") for heads that do not group or an empty step.
SdpaPagedLayout sdpa_paged_layout(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                  int64_t head_dim, const KvLayout& kv,
                                  PagedPadding pad = PagedPadding::none);

// The per-step arrays, one int32 upload: [seq_len_q | seq_len_kv | ragged_q | ragged_o |
// table], each part at its offset in elements. seq_len_q is a sequence's new tokens and
// seq_len_kv its positions after this step (cached + new); ragged_q and ragged_o (batch + 1
// entries) the element offset of its first row in qkv and in the output; table its block
// table as a [batch, pages] rectangle. Padding sequences (PagedPadding::empty_sequences only)
// have lengths 0, their offsets at the end of the rows and their tables 0.
struct SdpaPagedMeta {
  int64_t seq_len_q = 0, seq_len_kv = 0, ragged_q = 0, ragged_o = 0, table = 0;
  std::vector<int32_t> data;
};
// Throws BadInput when an offset or block does not fit int32, or a block table is short.
SdpaPagedMeta pack_sdpa_paged(const StepBatch& b, const SdpaPagedLayout& l);

// The one launch: the cost model's mixed-step attention work (mixed_attention_work), the grid
// cuDNN's own (0 here), the scores on chip (no scratch).
KernelLaunch plan_attention_sdpa_paged(const StepBatch& b, int64_t q_heads, int64_t kv_heads,
                                       int64_t head_dim, DType t);

}  // namespace tpb
