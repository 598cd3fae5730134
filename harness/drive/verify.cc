// Reference comparison. Tolerance: fp32 sums of a few thousand terms reordered by the split
// (BLAS blocking and the all-reduce order) differ by a few ulps per term; 1e-4 relative to
// the output's magnitude leaves an order of magnitude of margin over what we observe while
// still catching a wrong shard (errors of order 1).
#include "harness/drive/verify.h"

#include <algorithm>
#include <cmath>

#include "collectives/mpi/mpi_collective.h"

namespace tpb {

Verification verify_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                      Collective& tp_coll, int group_rank) {
  sharded.reset_state();
  sharded.step(tp_coll, nullptr, 0, nullptr);
  Verification v;
  if (group_rank != 0) return v;
  const std::vector<float> got = sharded.output();
  TpModelConfig ref_cfg = cfg;
  ref_cfg.tp = 1;
  ref_cfg.tp_rank = 0;
  std::vector<float> want;
  std::vector<int32_t> want_ids;
  {
    TpModel ref(dev, ref_cfg);  // freed before the timed steps
    // One rank: nothing to wait for, so no deadline (and no watchdog thread).
    auto self = make_mpi_collective(MPI_COMM_SELF, MpiWait{.timeout_s = 0});
    ref.step(*self, nullptr, 0, nullptr);
    want = ref.output();
    want_ids = ref.sampled_ids();
  }
  for (std::size_t i = 0; i < want.size(); ++i) {
    v.max_abs_err = std::max(v.max_abs_err, static_cast<double>(std::fabs(got[i] - want[i])));
    v.max_abs_ref = std::max(v.max_abs_ref, static_cast<double>(std::fabs(want[i])));
  }
  if (std::any_of(got.begin(), got.end(), [](float x) { return !std::isfinite(x); }))
    v.max_abs_err = INFINITY;
  v.tolerance = 1e-4 * std::max(1.0, v.max_abs_ref);
  v.passed = v.max_abs_err <= v.tolerance;
  if (cfg.lm_head) {
    // Greedy ids are exact: a TP split that reorders the sums may flip only a near-tie.
    v.tokens_match = sharded.sampled_ids() == want_ids;
    v.passed = v.passed && *v.tokens_match;
  }
  return v;
}

}  // namespace tpb
