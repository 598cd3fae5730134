// --check for mixed (serving) steps: the TP model against the unsharded tp = 1 reference over
// a short script of step batches from a fresh state, residual rows and sampled ids both. The
// layers-side twin of harness/drive/verify.h, with no MPI: the reference runs on a group of
// one that needs no communication.
#pragma once
#include <cstdint>
#include <vector>

#include "collectives/collective.h"
#include "layers/device.h"
#include "layers/step_batch.h"
#include "tp_model/tp_model.h"

namespace tpb {

struct MixedCheck {
  bool checked = false;  // this rank compared (group rank 0 only)
  bool passed = false;
  double max_abs_err = 0;  // residual rows of every step
  double max_abs_ref = 0;
  double tolerance = 0;
  int64_t ids = 0;           // sampled ids compared
  int64_t ids_differ = 0;    // of those, unequal (accepted only on a near tie)
  int64_t ids_near_tie = 0;  // of those, where the reference's top two logits nearly tie
};

// One model's run of the script: residual rows per step, sampled ids in order, and (the
// reference's only) the logits of the sampled rows, [ids, vocab].
struct MixedRun {
  std::vector<std::vector<float>> rows;
  std::vector<int32_t> ids;
  std::vector<float> logits;
  int64_t vocab = 0;
};

// The verdict, --check's rule (layers/reference/ref_check.h): every step's rows within
// relative_tolerance(cfg.dtype, shape, layers) of max|want|, and each id equal to the
// reference's or, on a near tie of the reference's logits, within the logits' tolerance.
MixedCheck judge_mixed(const MixedRun& got, const MixedRun& want, const TpModelConfig& cfg);

// The script: step 1 prefills prompt A whole (it samples) and the first `chunk_b` tokens of
// prompt B (it does not); step 2 decodes A, prefills the rest of B (it samples) and a new
// 1-token prompt C. Blocks are handed out interleaved from the top of the cache down, so
// tables are not contiguous and positions cross blocks. Needs 0 < chunk_b < prompt_b and
// enough blocks (BadInput otherwise).
std::vector<StepBatch> mixed_check_script(const KvLayout& kv, int64_t prompt_a, int64_t prompt_b,
                                          int64_t chunk_b);

// The serving layout a script needs at least: its largest step's tokens and sequences.
ServeShape serve_shape_for(const std::vector<StepBatch>& script, const KvLayout& kv, bool lm_head);

// serve --check's own script: prompts of 24 and 40 tokens (the second in chunks of 17 and 23)
// and a 1-token one, over 8 blocks of 16, so the check's small models cost the same wherever
// they are planned (harness/drive/serve/serve_memory.cc) and built (serve_runner.cc).
inline constexpr KvLayout kServeCheckKv{8, 16};
std::vector<StepBatch> serve_check_script();

// Collective over the TP group: every rank runs the script on its shard after reset_state();
// group rank 0 then builds the tp = 1 model of `cfg` on `dev`, runs the same script and
// compares (judge_mixed). Step indexes 0, 1, ... seed each step's input rows.
MixedCheck check_mixed_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                         Collective& tp_coll, const std::vector<StepBatch>& script);

}  // namespace tpb
