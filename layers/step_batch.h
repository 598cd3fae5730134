// A mixed step (tpbench serve): sequences that each bring their own cached length and their own
// number of new tokens, one for a decoding sequence and a chunk for a prefilling one, over a
// paged KV cache. The new tokens' rows are laid out sequence after sequence, in `seqs` order.
//
// The cache of each layer is `num_blocks` blocks of `block_tokens` positions, each position
// [kv_heads, head_dim] (so a block is [block_tokens, kv_heads, head_dim]). Position p of a
// sequence lives in block blocks[p / block_tokens] at row p % block_tokens. A slot cache is the
// special case block_tokens = max context and one block per sequence.
#pragma once
#include <cstdint>
#include <vector>

namespace tpb {

struct SeqSlice {
  int64_t cached = 0;      // positions already in the cache (attended to, not recomputed)
  int64_t new_tokens = 0;  // tokens this step: rows of the step's activations, >= 1
  // The step ends with this sequence's next token: a decode, or the last chunk of a prompt.
  // Only these rows go through the LM head and sampling.
  bool samples = true;
  std::vector<int32_t> blocks;  // block table: at least ceil((cached + new_tokens) / block)
};

struct KvLayout {
  int64_t num_blocks = 0;
  int64_t block_tokens = 16;  // vLLM's default block size
};

// The serving layout of a TpModel: activations sized for the largest step, a paged KV cache per
// layer, and the step's end (final norm, vocab-parallel LM head, greedy sampling).
struct ServeShape {
  int64_t max_tokens = 0;  // rows of the largest step (the token budget); 0 = not serving
  int64_t max_seqs = 0;    // sequences in one step
  KvLayout kv;
  bool lm_head = true;
};

struct StepBatch {
  std::vector<SeqSlice> seqs;

  int64_t tokens() const {
    int64_t t = 0;
    for (const auto& s : seqs) t += s.new_tokens;
    return t;
  }
  int64_t sampled() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.samples ? 1 : 0;
    return n;
  }
};

// Blocks a sequence's table must hold after this step: ceil((cached + new_tokens) / block).
inline int64_t blocks_needed(const SeqSlice& s, int64_t block_tokens) {
  return (s.cached + s.new_tokens + block_tokens - 1) / block_tokens;
}

// Throws BadInput naming the sequence and the rule when `b` does not fit `shape` (token and
// sequence budgets, new_tokens >= 1, cached >= 0, block tables long enough and in range).
// The scheduler builds batches; this catches one that a device op would read out of bounds.
void check_step_batch(const StepBatch& b, const ServeShape& shape);

}  // namespace tpb
