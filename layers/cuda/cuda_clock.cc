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
  line_.begin(calibrate());
  resolution_s_ = measure_resolution();
}

GpuClock::~GpuClock() {
  if (slots_) TPB_CUDA_CHECK_NOEXCEPT(cudaFree(slots_));
  if (scratch_) TPB_CUDA_CHECK_NOEXCEPT(cudaFree(scratch_));
  if (replay_) TPB_CUDA_CHECK_NOEXCEPT(cudaFree(replay_));
}

ClockSample GpuClock::calibrate() {
  // One bracket: the host clock before the launch and after the sync; the copy of the stamp
  // back is outside it (it does not move the stamp).
  const ClockSample best = tightest_bracket(kCalibrationRounds, [&] {
    ClockBracket b;
    b.host0_ns = host_now_ns();
    cuda_kernels::launch_stamp(stream_, scratch_);
    wait_stream(stream_);
    b.host1_ns = host_now_ns();
    uint64_t g = 0;
    TPB_CUDA_CHECK(cudaMemcpyAsync(&g, scratch_, sizeof(g), cudaMemcpyDeviceToHost, stream_));
    wait_stream(stream_);
    b.device_ns = static_cast<int64_t>(g);
    return b;
  });
  last_host_ns_ = host_now_ns();
  return best;
}

void GpuClock::calibrate_point(bool start) {
  if (start)
    line_.begin(calibrate());
  else
    line_.end(calibrate());
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
  if (host_now_ns() - last_host_ns_ > 1'000'000'000) line_.end(calibrate());
  for (std::size_t i = 0; i < count; ++i)
    host_ns[i] = line_.to_host_ns(static_cast<int64_t>(host_[i]));
}

}  // namespace tpb
