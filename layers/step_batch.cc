// Validation of a mixed step's batch against the serving layout it runs on.
#include "layers/step_batch.h"

#include <string>

#include "base/errors.h"

namespace tpb {

namespace {

void check_seq(const SeqSlice& s, std::size_t i, const KvLayout& kv) {
  const std::string at = "step batch: sequence " + std::to_string(i) + ": ";
  if (s.new_tokens < 1)
    throw BadInput(at + "new_tokens must be >= 1 (got " + std::to_string(s.new_tokens) + ")");
  if (s.cached < 0)
    throw BadInput(at + "cached must be >= 0 (got " + std::to_string(s.cached) + ")");
  const int64_t need = blocks_needed(s, kv.block_tokens);
  if (static_cast<int64_t>(s.blocks.size()) < need)
    throw BadInput(at + "needs " + std::to_string(need) + " blocks, its table holds " +
                   std::to_string(s.blocks.size()));
  for (int64_t k = 0; k < need; ++k)
    if (s.blocks[k] < 0 || s.blocks[k] >= kv.num_blocks)
      throw BadInput(at + "block " + std::to_string(s.blocks[k]) + " is outside the cache's " +
                     std::to_string(kv.num_blocks) + " blocks");
}

}  // namespace

void check_step_batch(const StepBatch& b, const ServeShape& shape) {
  if (shape.max_tokens < 1) throw BadInput("step batch: the model is not in serving mode");
  if (b.seqs.empty()) throw BadInput("step batch: no sequences");
  if (b.tokens() > shape.max_tokens)
    throw BadInput("step batch: " + std::to_string(b.tokens()) + " tokens exceed the budget of " +
                   std::to_string(shape.max_tokens));
  if (static_cast<int64_t>(b.seqs.size()) > shape.max_seqs)
    throw BadInput("step batch: " + std::to_string(b.seqs.size()) + " sequences exceed max_seqs " +
                   std::to_string(shape.max_seqs));
  for (std::size_t i = 0; i < b.seqs.size(); ++i) check_seq(b.seqs[i], i, shape.kv);
}

}  // namespace tpb
