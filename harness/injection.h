// Applies one rank's --inject spec during a point: extra compute after each block
// (slowdown, calibrated on warm-up steps), jitter, host delay, a hang, and a memory
// bandwidth hog thread. All of it runs only on the named ranks.
#pragma once
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "harness/inject.h"
#include "harness/timeline.h"
#include "layers/tp_model.h"

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

  double extra_per_block_s(int block) const { return extra_[block]; }
  const InjectSpec& spec() const { return spec_; }

 private:
  InjectSpec spec_;
  Device& dev_;
  Timeline& tl_;
  std::mt19937_64 rng_;
  double extra_[2] = {0, 0};
};

// A thread that streams memory (memcpy between two buffers far larger than the LLC) until
// destroyed: a real bandwidth competitor on the rank's memory system.
class MemContender {
 public:
  explicit MemContender(double llc_bytes);
  ~MemContender();
  MemContender(const MemContender&) = delete;
  MemContender& operator=(const MemContender&) = delete;
  double bytes_moved() const { return bytes_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<double> bytes_{0};
  std::vector<char> a_, b_;
  std::thread th_;
};

}  // namespace tpb
