// The mixed-step check: script, reference run and comparison. Tolerance: as --check's
// (harness/drive/verify.cc), fp32 sums reordered by the split differ by a few ulps per term;
// 1e-4 of the output's magnitude leaves margin and still catches a wrong shard or a wrong
// block read (errors of order 1). Sampled ids are compared exactly: a near-tie between two
// logits could flip one, which the random weights make unlikely at these sizes.
#include "tp_model/mixed_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "collectives/self_collective.h"

namespace tpb {

namespace {

// Hands out blocks from the top of the cache down, so consecutive requests of different
// sequences interleave and no table is physically contiguous.
class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks) : next_(num_blocks - 1) {}
  int32_t take() {
    if (next_ < 0) throw BadInput("mixed check: the KV cache has too few blocks for the script");
    return static_cast<int32_t>(next_--);
  }
  // Grows s's table to cover its positions after this step.
  void cover(SeqSlice& s, int64_t block_tokens) {
    while (static_cast<int64_t>(s.blocks.size()) < blocks_needed(s, block_tokens))
      s.blocks.push_back(take());
  }

 private:
  int64_t next_;
};

struct Run {
  std::vector<std::vector<float>> rows;  // residual rows per step
  std::vector<int32_t> ids;              // sampled ids of all steps, in order
};

Run run_script(TpModel& m, Collective& coll, const std::vector<StepBatch>& script) {
  Run r;
  m.reset_state();
  for (std::size_t i = 0; i < script.size(); ++i) {
    const std::vector<int32_t> ids =
        m.step_mixed(coll, nullptr, static_cast<int>(i), nullptr, script[i]);
    r.ids.insert(r.ids.end(), ids.begin(), ids.end());
    r.rows.push_back(m.output());
  }
  return r;
}

}  // namespace

std::vector<StepBatch> mixed_check_script(const KvLayout& kv, int64_t prompt_a, int64_t prompt_b,
                                          int64_t chunk_b) {
  if (prompt_a < 1 || chunk_b < 1 || chunk_b >= prompt_b)
    throw BadInput("mixed check: needs prompt_a >= 1 and 0 < chunk_b < prompt_b");
  BlockPool pool(kv.num_blocks);
  SeqSlice a{0, prompt_a, true, {}}, b{0, chunk_b, false, {}};
  // Step 1's tables grow side by side, so a's and b's blocks alternate down the cache.
  const int64_t na = blocks_needed(a, kv.block_tokens), nb = blocks_needed(b, kv.block_tokens);
  for (int64_t k = 0; k < std::max(na, nb); ++k) {
    if (k < na) a.blocks.push_back(pool.take());
    if (k < nb) b.blocks.push_back(pool.take());
  }
  StepBatch s1{{a, b}};
  SeqSlice a2{prompt_a, 1, true, a.blocks}, b2{chunk_b, prompt_b - chunk_b, true, b.blocks};
  SeqSlice c{0, 1, true, {}};
  pool.cover(a2, kv.block_tokens);
  pool.cover(c, kv.block_tokens);
  pool.cover(b2, kv.block_tokens);
  return {s1, StepBatch{{a2, b2, c}}};
}

ServeShape serve_shape_for(const std::vector<StepBatch>& script, const KvLayout& kv, bool lm_head) {
  ServeShape s;
  s.kv = kv;
  s.lm_head = lm_head;
  for (const StepBatch& b : script) {
    s.max_tokens = std::max(s.max_tokens, b.tokens());
    s.max_seqs = std::max(s.max_seqs, static_cast<int64_t>(b.seqs.size()));
  }
  return s;
}

MixedCheck check_mixed_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                         Collective& tp_coll,
                                         const std::vector<StepBatch>& script) {
  const Run got = run_script(sharded, tp_coll, script);
  MixedCheck v;
  if (tp_coll.rank() != 0) return v;
  TpModelConfig ref_cfg = cfg;
  ref_cfg.tp = 1;
  ref_cfg.tp_rank = 0;
  Run want;
  {
    TpModel ref(dev, ref_cfg);  // freed before the caller's timed steps
    SelfCollective self;
    want = run_script(ref, self, script);
  }
  v.checked = true;
  bool finite = true;
  for (std::size_t s = 0; s < want.rows.size(); ++s)
    for (std::size_t i = 0; i < want.rows[s].size(); ++i) {
      const float g = got.rows[s][i], w = want.rows[s][i];
      finite = finite && std::isfinite(g);
      v.max_abs_err = std::max(v.max_abs_err, static_cast<double>(std::fabs(g - w)));
      v.max_abs_ref = std::max(v.max_abs_ref, static_cast<double>(std::fabs(w)));
    }
  if (!finite) v.max_abs_err = INFINITY;
  v.ids = static_cast<int64_t>(want.ids.size());
  for (std::size_t i = 0; i < want.ids.size(); ++i)
    v.ids_differ += i < got.ids.size() && got.ids[i] == want.ids[i] ? 0 : 1;
  v.tolerance = 1e-4 * std::max(1.0, v.max_abs_ref);
  v.passed = v.max_abs_err <= v.tolerance && v.ids_differ == 0 && got.ids.size() == want.ids.size();
  return v;
}

}  // namespace tpb
