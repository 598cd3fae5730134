// The mixed-step check: script, reference run and comparison. The judgement is --check's
// (layers/reference/ref_check.h, as harness/drive/verify.cc judges run's sharded step against
// the unsharded one): residual rows within the dtype- and depth-aware tolerance of tolerance.h,
// and sampled ids equal or, where the reference's top two logits nearly tie, both acceptable.
#include "tp_model/mixed_check.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "collectives/self_collective.h"
#include "layers/reference/ref_check.h"

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

// `vocab` > 0: also keeps the sampled rows' logits (a tp = 1 model's, the whole vocabulary).
MixedRun run_script(TpModel& m, Collective& coll, const std::vector<StepBatch>& script,
                    int64_t vocab) {
  MixedRun r;
  m.reset_state();
  for (std::size_t i = 0; i < script.size(); ++i) {
    const std::vector<int32_t> ids =
        m.step_mixed(coll, nullptr, static_cast<int>(i), nullptr, script[i]);
    r.ids.insert(r.ids.end(), ids.begin(), ids.end());
    r.rows.push_back(m.output());
    if (vocab <= 0 || ids.empty()) continue;
    const std::vector<float> l = m.sampled_logits(static_cast<int64_t>(ids.size()));
    r.logits.insert(r.logits.end(), l.begin(), l.end());
    r.vocab = vocab;
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

std::vector<StepBatch> serve_check_script() {
  return mixed_check_script(kServeCheckKv, 24, 40, 17);
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

MixedCheck judge_mixed(const MixedRun& got, const MixedRun& want, const TpModelConfig& cfg) {
  MixedCheck v;
  v.checked = true;
  const double rel = ref::relative_tolerance(cfg.dtype, cfg.shape, cfg.layers, false);
  bool rows_ok = got.rows.size() == want.rows.size();
  v.max_abs_err = rows_ok ? 0.0 : INFINITY;
  for (std::size_t s = 0; rows_ok && s < want.rows.size(); ++s) {
    const ref::ErrorCheck e = ref::compare_outputs(got.rows[s], want.rows[s], rel);
    v.max_abs_err = std::max(v.max_abs_err, e.max_abs_err);
    v.max_abs_ref = std::max(v.max_abs_ref, e.max_abs_ref);
  }
  v.tolerance = rel * v.max_abs_ref;
  v.ids = static_cast<int64_t>(want.ids.size());
  for (std::size_t i = 0; i < want.ids.size(); ++i)
    v.ids_differ += i < got.ids.size() && got.ids[i] == want.ids[i] ? 0 : 1;
  bool ids_ok = got.ids.size() == want.ids.size();
  if (ids_ok && v.ids > 0) {
    // The reference's logits as the host reference's: its top two say where a flip is a tie.
    ref::StackResult r;
    r.vocab = want.vocab;
    r.logits.assign(want.logits.begin(), want.logits.end());
    const std::vector<double> tol = ref::logit_tolerances(
        r, ref::expected_relative_error(cfg.dtype, cfg.shape, cfg.layers, true));
    const ref::TokenCheck t = ref::check_tokens_agree(got.ids, want.ids, r, tol);
    ids_ok = t.match;
    v.ids_near_tie = t.near_ties;
  }
  v.passed = v.max_abs_err <= v.tolerance && ids_ok;
  return v;
}

MixedCheck check_mixed_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                         Collective& tp_coll,
                                         const std::vector<StepBatch>& script) {
  const MixedRun got = run_script(sharded, tp_coll, script, 0);
  if (tp_coll.rank() != 0) return MixedCheck{};
  TpModelConfig ref_cfg = cfg;
  ref_cfg.tp = 1;
  ref_cfg.tp_rank = 0;
  MixedRun want;
  {
    TpModel ref(dev, ref_cfg);  // freed before the caller's timed steps
    SelfCollective self;
    want = run_script(ref, self, script, cfg.shape.vocab);
  }
  return judge_mixed(got, want, cfg);
}

}  // namespace tpb
