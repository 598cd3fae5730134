// --inject sm_clock=emulate@F on a GPU, the stand-in for a lower SM clock that needs no
// privileges: blocks that each take a whole SM spin on a high-priority side stream, so the rank's
// kernels run on the SMs left, about 1 / (1 - F) times as long when compute-bound.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "base/cuda_check.h"
#include "layers/cuda/cuda_device.h"
#include "layers/cuda/cuda_wait.h"
#include "layers/cuda/kernels/kernels.h"

namespace tpb {
namespace {

// Slices, not one endless kernel: cudaFree waits for every kernel on the device, so an endless
// one would hang the first free. Two slices stay queued, so the next is pending as the last ends
// and, at the highest priority, takes the SMs back first; a free waits at most about two slices.
constexpr uint64_t kSliceNs = 10'000'000;

class CudaSmHold final : public SmHold {
 public:
  CudaSmHold(CudaDevice& dev, double fraction) : index_(dev.device_index()), sms_(dev.sm_count()) {
    held_ = std::clamp(static_cast<int>(std::lround(fraction * sms_)), 1, std::max(1, sms_ - 1));
    TPB_CUDA_CHECK(cudaDeviceGetAttribute(&smem_, cudaDevAttrMaxSharedMemoryPerBlockOptin, index_));
    int least = 0, greatest = 0;
    TPB_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    TPB_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
    cuda_kernels::prepare_sm_hold(smem_);
    thread_ = std::thread([this] { loop(); });
  }
  ~CudaSmHold() override {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    try {
      wait_stream(stream_);  // at most the slices in flight; its own kernels, no collective's
    } catch (...) {
    }
    TPB_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(stream_));
  }
  int sms_held() const override { return held_; }
  int sm_count() const override { return sms_; }

 private:
  void loop() {
    // Errors end the hold quietly; the measured work reports its own CUDA errors.
    try {
      TPB_CUDA_CHECK(cudaSetDevice(index_));
      cudaEvent_t done[2];
      for (cudaEvent_t& e : done)
        TPB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      for (int i = 0; !stop_.load(std::memory_order_relaxed); i ^= 1) {
        cuda_kernels::launch_sm_hold(stream_, held_, smem_, kSliceNs);
        TPB_CUDA_CHECK(cudaEventRecord(done[i], stream_));
        // Polled, not waited on: stop stays prompt and a wedged GPU cannot block the thread.
        while (!stop_.load(std::memory_order_relaxed) &&
               cudaEventQuery(done[i ^ 1]) == cudaErrorNotReady)
          std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
      for (cudaEvent_t e : done) TPB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e));
    } catch (const std::exception&) {
    }
  }

  int index_, sms_, held_ = 0, smem_ = 0;
  cudaStream_t stream_ = nullptr;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<SmHold> CudaDevice::hold_sms(double fraction) {
  return std::make_unique<CudaSmHold>(*this, fraction);
}

}  // namespace tpb
