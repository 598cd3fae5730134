// A device timer mapped onto the host steady clock through calibration brackets: the tightest
// of several host-read/stamp/host-read brackets is kept, and each point gets its own line
// between a sample at its start and one at its end. Pure (no CUDA), so the host tests run it.
#pragma once
#include <cstdint>
#include <functional>

namespace tpb {

// host_ns = device_ns + offset_ns, measured at device_ns; the stamp lay inside a host bracket
// bracket_ns wide, so the offset is off by at most half of it.
struct ClockSample {
  int64_t gpu_ns = 0;
  int64_t offset_ns = 0;
  int64_t bracket_ns = 0;
};

// One bracket: the host clock read before the stamp was launched, the stamp's device time,
// and the host clock read once the stamp had completed.
struct ClockBracket {
  int64_t host0_ns = 0, device_ns = 0, host1_ns = 0;
};

// The narrowest of `rounds` brackets from `take` (ties: the earliest), as a sample at its
// midpoint. A wide bracket means the launch or the sync was slow, not that the stamp was late,
// so only the narrowest bounds the offset tightly. `rounds` < 1 takes one.
ClockSample tightest_bracket(int rounds, const std::function<ClockBracket()>& take);

// The line a point's stamps are mapped with. begin() restarts it at a point's start, end()
// closes it at the point's end (and may be called again later: the latest end counts).
// Before any end() the line is the begin sample's constant offset.
class ClockLine {
 public:
  void begin(const ClockSample& s) { a_ = b_ = s, has_ = true; }
  void end(const ClockSample& s) {
    if (!has_) a_ = s;
    b_ = s, has_ = true;
  }
  bool calibrated() const { return has_; }
  const ClockSample& start() const { return a_; }
  const ClockSample& finish() const { return b_; }

  int64_t to_host_ns(int64_t device_ns) const { return interpolate(device_ns, a_, b_); }
  // Half the wider of the line's two brackets: an interpolated offset is a weighted mean of the
  // two ends', so its error is at most the larger end's.
  double uncertainty_s() const;

  // Pure: device ns -> host ns through two samples, the offset linear in device time (a
  // constant rate difference between the clocks); a constant offset when they coincide.
  static int64_t interpolate(int64_t device_ns, const ClockSample& a, const ClockSample& b);

 private:
  ClockSample a_, b_;
  bool has_ = false;
};

}  // namespace tpb
