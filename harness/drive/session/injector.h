// Applies one rank's --inject spec during a point: extra compute after each block
// (slowdown), jitter, host delay, a hang, and a memory bandwidth hog thread. All of it runs
// only on the named ranks.
//
// Slowdown: "the compute takes F x as long" is applied per block. Where the stamps of the
// block that just ran are final when its ops return (the CPU backend runs ops synchronously),
// the extra is (F - 1) x that block's own measured compute, so the slowdown holds step by step
// even when the machine's speed drifts. Elsewhere (stamps on a device stream, not readable
// without a sync) it is (F - 1) x the warm-up median of the block, calibrated once.
//
// slow_op: one op takes F x as long, its extra spun inside the op's own stamp (a slow kernel
// rather than extra work: it is the op's time, not Op::injected), live or calibrated alike.
//
// Live spins are wall-clock spins (a slower device takes longer in wall time), and each one
// carries the error of the one before: on a time-sliced CPU a spin descheduled across its
// deadline ends late, so the next spin is shortened by the overshoot and the injected total
// stays (F - 1) x the measured compute, whatever the machine's load.
#pragma once
#include <random>
#include <vector>

#include "harness/config/inject_spec.h"
#include "layers/timeline.h"
#include "tp_model/tp_model.h"

namespace tpb {

class Injector final : public StepHooks {
 public:
  Injector(const InjectSpec& spec, Device& dev, Timeline& tl, uint64_t seed);

  // Sets the slowdown's extra seconds per block from the warm-up steps' compute times, so
  // "F x as long" is relative to this rank's own measured compute.
  void calibrate(const std::vector<SegmentRecord>& warmup);

  // Called at the start of every step, inside the step interval.
  void before_step(int step);
  void after_block(int layer, int block, int step) override;
  // slow_op: the op's extra (F - 1) x its own time, spun inside its stamp. Live, that time is
  // the op's wall time in this call; elsewhere the warm-up median of its stamps (calibrate).
  void op_begin(Op op, Op carried, int layer, int step) override;
  void op_end(Op op, Op carried, int layer, int step) override;

  bool live() const { return live_; }
  const InjectSpec& spec() const { return spec_; }

 private:
  InjectSpec spec_;
  Device& dev_;
  Timeline& tl_;
  // Compute seconds of the block that just ran: its closed compute segments, back to the
  // previous collective, injected segment or step bound.
  double block_compute_s();

  std::mt19937_64 rng_;
  bool live_ = false;
  double extra_[2] = {0, 0};
  std::vector<int64_t> marks_;  // scratch for block_compute_s
  double owed_s_ = 0;           // live mode: injected wall time still owed (< 0: overshot)
  bool slowed(Op op, Op carried, int step) const;
  void calibrate_slow_op(const std::vector<SegmentRecord>& warmup);
  double op_t0_ = 0;       // live mode: when the slowed op began
  double op_extra_s_ = 0;  // elsewhere: the slowed op's extra per stamp, from the warm-up
  double op_owed_s_ = 0;   // live mode: as owed_s_, for the slowed op
};

}  // namespace tpb
