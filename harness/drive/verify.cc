// --check on group rank 0. The host reference is the verdict: at TP 1 a comparison with a tp = 1
// TpModel would compare the step with itself (error exactly 0, a check that cannot fail). At
// TP > 1 the sharded step is also held against the unsharded tp = 1 step on the same device,
// which isolates the split and the all-reduce from the backend's own rounding. Tolerances:
// layers/reference/tolerance.h and ref_check.cc.
#include "harness/drive/verify.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "collectives/mpi/mpi_collective.h"
#include "layers/reference/ref_check.h"
#include "layers/reference/stack_reference.h"

namespace tpb {

namespace {

// The reference runs while the group's other ranks wait. Its threads inherit this rank's CPU
// binding (mpirun --bind-to core gives one core), and ranks sharing the host share its cores.
// Llama-3.1-8B, B = 1 decode with the LM head, on an H200 host: about 2 s on 16 threads, 20 s
// on one.
int reference_threads(const DeviceCaps& caps) {
  const int host = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int allowed = host;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = std::max(1, CPU_COUNT(&set));
  return std::max(1, std::min(allowed, host / std::max(1, caps.host_ranks)));
}

// The unsharded tp = 1 step on this device, against the sharded one (both rounded alike, so
// only the split and the all-reduce's order differ).
void against_unsharded(Device& dev, const TpModelConfig& cfg, const std::vector<float>& got,
                       const std::vector<int32_t>& got_ids, const ref::StackResult& host,
                       const std::vector<double>& logit_tol, double rel_tol, VerifySample& d) {
  TpModelConfig one = cfg;
  one.tp = 1;
  one.tp_rank = 0;
  std::vector<float> want;
  std::vector<int32_t> want_ids;
  {
    TpModel model(dev, one);  // freed before the timed steps
    // One rank: nothing to wait for, so no deadline (and no watchdog thread).
    auto self = make_mpi_collective(MPI_COMM_SELF, MpiWait{.timeout_s = 0});
    model.step(*self, nullptr, 0, nullptr);
    want = model.output();
    want_ids = model.sampled_ids();
  }
  const ref::ErrorCheck e = ref::compare_outputs(got, want, rel_tol);
  d.sharded_checked = true;
  d.sharded_max_abs_err = e.max_abs_err;
  d.sharded_tolerance = e.tolerance;
  d.sharded_passed = e.passed;
  if (cfg.lm_head) {
    d.sharded_tokens_checked = true;
    d.sharded_tokens_match = ref::check_tokens_agree(got_ids, want_ids, host, logit_tol).match;
    d.sharded_passed = d.sharded_passed && d.sharded_tokens_match;
  }
}

// The host reference's speed, from the comment on reference_threads: Llama-3.1-8B B = 1
// decode with the LM head is 2 x 8.0e9 = 1.6e10 FLOPs in about 20 s on one core, 0.8 GFLOP/s.
// Counted at one thread (the waiting ranks do not know rank 0's binding) and a quarter of
// that speed (a core shared with a peer rank, a slower host), then a factor 4 on top.
constexpr double kReferenceFlopsPerS = 0.2e9;
constexpr double kReferenceSafety = 4.0;

}  // namespace

double reference_allowance_s(const CostQuery& q) {
  CostQuery one = q;
  one.tp = 1;
  return kReferenceSafety * step_cost(one).flops / kReferenceFlopsPerS;
}

Verification verify_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                      Collective& tp_coll, int group_rank) {
  sharded.reset_state();
  sharded.step(tp_coll, nullptr, 0, nullptr);
  Verification v;
  if (group_rank != 0) return v;
  const std::vector<float> got = sharded.output();
  const std::vector<int32_t> got_ids = sharded.sampled_ids();
  const ref::StackResult host = ref::reference_step(cfg, reference_threads(dev.caps()));
  const double rel = ref::relative_tolerance(cfg.dtype, cfg.shape, cfg.layers, false);
  const ref::ErrorCheck e = ref::compare_outputs(got, host.x, rel);
  v.max_abs_err = e.max_abs_err;
  v.max_abs_ref = e.max_abs_ref;
  v.tolerance = e.tolerance;
  v.passed = e.passed;
  v.detail.host_reference = true;
  v.detail.max_abs_ref = e.max_abs_ref;
  std::vector<double> logit_tol;
  if (cfg.lm_head) {
    logit_tol = ref::logit_tolerances(
        host, ref::expected_relative_error(cfg.dtype, cfg.shape, cfg.layers, true));
    const ref::TokenCheck t = ref::check_tokens(got_ids, host, logit_tol);
    v.tokens_match = t.match;
    v.detail.tokens_near_tie = t.near_ties;
    v.passed = v.passed && t.match;
  }
  if (cfg.tp > 1) {
    against_unsharded(dev, cfg, got, got_ids, host, logit_tol, rel, v.detail);
    v.passed = v.passed && v.detail.sharded_passed;
  }
  return v;
}

}  // namespace tpb
