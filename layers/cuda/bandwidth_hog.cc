// --inject mem_contend on a GPU: a host thread keeps a copy kernel running on a side stream of
// the rank's GPU, so the hog competes for HBM bandwidth (and SMs) as a co-located job would.
// The host MemContender thread would only load host DRAM, which the GPU's work never touches.
#include <cuda_runtime.h>

#include <atomic>
#include <thread>

#include "base/cuda_check.h"
#include "layers/cuda/cuda_device.h"
#include "layers/cuda/cuda_wait.h"
#include "layers/cuda/kernels/kernels.h"

namespace tpb {
namespace {

class CudaBandwidthHog final : public BandwidthHog {
 public:
  CudaBandwidthHog(CudaDevice& dev, std::size_t bytes)
      : index_(dev.device_index()), blocks_(4 * dev.sm_count()) {
    bytes_ = bytes / 16 * 16;
    // Through the device, so the budget counts them (the point reserved them beforehand).
    a_ = dev.alloc(bytes_);
    b_ = dev.alloc(bytes_);
    TPB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    thread_ = std::thread([this] { loop(); });
  }
  ~CudaBandwidthHog() override {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    try {
      wait_stream(stream_);  // its own copy kernel: no collective's work to bound
    } catch (const std::exception&) {
    }
    TPB_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(stream_));
  }
  double bytes_moved() const override { return moved_.load(); }

 private:
  void loop() {
    // One copy in flight at a time: the stream's queue stays short, so stopping is prompt.
    // Errors end the hog quietly; the measured work reports its own CUDA errors.
    try {
      TPB_CUDA_CHECK(cudaSetDevice(index_));
      while (!stop_.load(std::memory_order_relaxed)) {
        cuda_kernels::launch_copy(stream_, blocks_, b_.get(), a_.get(), bytes_);
        wait_stream(stream_);
        moved_.store(moved_.load(std::memory_order_relaxed) + 2.0 * static_cast<double>(bytes_),
                     std::memory_order_relaxed);
      }
    } catch (const std::exception&) {
    }
  }

  int index_, blocks_;
  std::size_t bytes_ = 0;
  DeviceBuffer a_, b_;
  cudaStream_t stream_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<double> moved_{0};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<BandwidthHog> CudaDevice::start_bandwidth_hog(std::size_t buffer_bytes) {
  return std::make_unique<CudaBandwidthHog>(*this, buffer_bytes);
}

}  // namespace tpb
