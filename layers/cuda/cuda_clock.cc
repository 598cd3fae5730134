// GpuClock: globaltimer stamps and their mapping to the host steady clock.
#include "layers/cuda/cuda_clock.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>

#include "base/cuda_check.h"
#include "layers/cuda/cuda_wait.h"  // no hook: it waits after synchronize(), on its own work
#include "layers/cuda/kernels/kernels.h"

namespace tpb {
namespace {

constexpr int kCalibrationRounds = 16;
constexpr int kBurstReads = 256;

int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

GpuClock::GpuClock(cudaStream_t stream) : stream_(stream) {
  TPB_CUDA_CHECK(cudaMalloc(&scratch_, kBurstReads * sizeof(uint64_t)));
  TPB_CUDA_CHECK(cudaMalloc(&replay_, 2 * sizeof(uint64_t)));
  // On the compute stream: a legacy-stream memset is not ordered with this stream's stamps.
  TPB_CUDA_CHECK(cudaMemsetAsync(replay_, 0, 2 * sizeof(uint64_t), stream_));
  wait_stream(stream_);
  first_ = last_ = calibrate();
  resolution_s_ = measure_resolution();
}

GpuClock::~GpuClock() {
  if (slots_) TPB_CUDA_CHECK_NOEXCEPT(cudaFree(slots_));
  if (scratch_) TPB_CUDA_CHECK_NOEXCEPT(cudaFree(scratch_));
  if (replay_) TPB_CUDA_CHECK_NOEXCEPT(cudaFree(replay_));
}

ClockSample GpuClock::calibrate() {
  // The stamp lands somewhere inside [h0, h1]; the midpoint is off by at most half the gap,
  // so the narrowest bracket of several rounds gives the best offset.
  ClockSample best;
  best.bracket_ns = INT64_MAX;
  for (int i = 0; i < kCalibrationRounds; ++i) {
    const int64_t h0 = host_now_ns();
    cuda_kernels::launch_stamp(stream_, scratch_);
    wait_stream(stream_);
    const int64_t h1 = host_now_ns();
    uint64_t g = 0;
    TPB_CUDA_CHECK(cudaMemcpyAsync(&g, scratch_, sizeof(g), cudaMemcpyDeviceToHost, stream_));
    wait_stream(stream_);
    if (h1 - h0 < best.bracket_ns) {
      best.gpu_ns = static_cast<int64_t>(g);
      best.offset_ns = h0 + (h1 - h0) / 2 - static_cast<int64_t>(g);
      best.bracket_ns = h1 - h0;
    }
  }
  last_host_ns_ = host_now_ns();
  return best;
}

double GpuClock::measure_resolution() {
  cuda_kernels::launch_timer_burst(stream_, scratch_, kBurstReads);
  std::vector<uint64_t> reads(kBurstReads);
  TPB_CUDA_CHECK(cudaMemcpyAsync(reads.data(), scratch_, kBurstReads * sizeof(uint64_t),
                                 cudaMemcpyDeviceToHost, stream_));
  wait_stream(stream_);
  return min_step_s(reads);
}

double GpuClock::min_step_s(const std::vector<uint64_t>& reads) {
  uint64_t best = 0;
  for (std::size_t i = 1; i < reads.size(); ++i) {
    if (reads[i] <= reads[i - 1]) continue;
    const uint64_t d = reads[i] - reads[i - 1];
    if (best == 0 || d < best) best = d;
  }
  return static_cast<double>(best) * 1e-9;
}

int64_t GpuClock::to_host_ns(int64_t gpu_ns, const ClockSample& a, const ClockSample& b) {
  const int64_t span = b.gpu_ns - a.gpu_ns;
  if (span <= 0) return gpu_ns + b.offset_ns;
  // Offsets change linearly with GPU time (a constant rate difference between the clocks).
  const double frac = static_cast<double>(gpu_ns - a.gpu_ns) / static_cast<double>(span);
  const double off =
      static_cast<double>(a.offset_ns) + frac * static_cast<double>(b.offset_ns - a.offset_ns);
  return gpu_ns + static_cast<int64_t>(off);
}

double GpuClock::uncertainty_s() const {
  return 0.5e-9 * static_cast<double>(std::max(first_.bracket_ns, last_.bracket_ns));
}

void GpuClock::reserve(std::size_t slots) {
  if (slots <= capacity_) return;
  if (slots_) TPB_CUDA_CHECK(cudaFree(slots_));
  slots_ = nullptr;
  capacity_ = 0;
  TPB_CUDA_CHECK(cudaMalloc(&slots_, slots * sizeof(uint64_t)));
  TPB_CUDA_CHECK(cudaMemsetAsync(slots_, 0, slots * sizeof(uint64_t), stream_));
  wait_stream(stream_);
  capacity_ = slots;
  host_.resize(slots);
}

void GpuClock::mark(std::size_t slot) {
  TPB_ASSERT(slot < capacity_, "mark slot beyond reserve_marks");
  if (capturing_)
    cuda_kernels::launch_stamp_replay(stream_, slots_, capacity_, replay_, slot);
  else
    cuda_kernels::launch_stamp(stream_, slots_ + slot);
}

void GpuClock::capture_advance() {
  cuda_kernels::launch_replay_advance(stream_, replay_);
}

void GpuClock::arm_replays(std::size_t slots_per_replay) {
  // Stream-ordered after any replay still queued; the host copy stays alive (a member) and
  // the sync makes the pageable copy complete before the next replay can be launched.
  replay_host_[0] = 0;
  replay_host_[1] = slots_per_replay;
  TPB_CUDA_CHECK(cudaMemcpyAsync(replay_, replay_host_, sizeof(replay_host_),
                                 cudaMemcpyHostToDevice, stream_));
  wait_stream(stream_);
}

void GpuClock::collect(std::size_t first, std::size_t count, int64_t* host_ns) {
  TPB_ASSERT(first + count <= capacity_, "collect_marks beyond reserve_marks");
  if (count == 0) return;
  TPB_CUDA_CHECK(cudaMemcpyAsync(host_.data(), slots_ + first, count * sizeof(uint64_t),
                                 cudaMemcpyDeviceToHost, stream_));
  wait_stream(stream_);
  if (host_now_ns() - last_host_ns_ > 1'000'000'000) last_ = calibrate();
  for (std::size_t i = 0; i < count; ++i)
    host_ns[i] = to_host_ns(static_cast<int64_t>(host_[i]), first_, last_);
}

}  // namespace tpb
