// Device timestamps for Device::mark: a 1-thread kernel writes %globaltimer into a slot on the
// stream, and collect() maps GPU nanoseconds to host steady-clock nanoseconds through the line
// of layers/clock_map.h, calibrated at each point's start and end (tightest of 16 brackets).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "layers/clock_map.h"

namespace tpb {

class GpuClock {
 public:
  explicit GpuClock(cudaStream_t stream);
  ~GpuClock();
  GpuClock(const GpuClock&) = delete;
  GpuClock& operator=(const GpuClock&) = delete;

  void reserve(std::size_t slots);
  void mark(std::size_t slot);
  // After the stream is idle. Maps with the current point's line; recalibrates its end first
  // when that is over a second old (callers that never mark a point: the device check).
  void collect(std::size_t first, std::size_t count, int64_t* host_ns);
  // A point's start (restarts the line: the rate seen since device open is not this point's)
  // and its end. Each takes a fresh tightest bracket; the stream must be idle.
  void calibrate_point(bool start);

  // CUDA graphs: while capturing, mark() records a stamp that writes
  // graph_replay_slot(slot, r, slots_per_replay) with r read on the device; end_capture()
  // appends the kernel that advances r; arm_replays() sets r = 0 and the stride (stream-ordered).
  // The slot storage must not be re-reserved while a graph that stamps into it exists.
  void set_capturing(bool on) { capturing_ = on; }
  void capture_advance();
  void arm_replays(std::size_t slots_per_replay);

  double resolution_s() const { return resolution_s_; }
  // A converted stamp's error against the host clock: half the line's wider bracket, plus the
  // timer's resolution (a stamp reads the last tick, up to one step before the event).
  double uncertainty_s() const { return line_.uncertainty_s() + resolution_s_; }

  // Pure: GPU ns -> host ns through two calibration samples (exposed for unit tests).
  static int64_t to_host_ns(int64_t gpu_ns, const ClockSample& a, const ClockSample& b) {
    return ClockLine::interpolate(gpu_ns, a, b);
  }
  // Pure: smallest nonzero step of consecutive timer reads, in seconds (0 if none).
  static double min_step_s(const std::vector<uint64_t>& reads);

 private:
  ClockSample calibrate();
  double measure_resolution();

  cudaStream_t stream_;
  uint64_t* slots_ = nullptr;  // device
  std::size_t capacity_ = 0;
  uint64_t* scratch_ = nullptr;  // device, calibration and burst reads
  uint64_t* replay_ = nullptr;   // device {replay index, slots per replay}
  uint64_t replay_host_[2] = {0, 0};
  bool capturing_ = false;
  std::vector<uint64_t> host_;
  ClockLine line_;
  int64_t last_host_ns_ = 0;
  double resolution_s_ = 0;
};

}  // namespace tpb
