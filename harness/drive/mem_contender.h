// The CPU backend's --inject mem_contend: a host thread that streams memory beside a rank's
// work. Its own small library (tpb_mem_contender), so the TSan stage builds only the
// threaded code and its test (tests/unit/test_threads.cc), not the whole harness.
#pragma once
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "layers/device.h"

namespace tpb {

// Size of each of the two buffers a mem_contend hog copies between: far larger than the
// last-level cache, so the copies stream from memory.
std::size_t mem_contend_buffer_bytes(double llc_bytes);

// A thread that streams host memory (memcpy between two buffers) until destroyed: a real
// bandwidth competitor on the CPU backend's memory system. Devices with their own memory start
// their own hog instead (Device::start_bandwidth_hog).
class MemContender final : public BandwidthHog {
 public:
  explicit MemContender(std::size_t buffer_bytes);
  ~MemContender() override;
  MemContender(const MemContender&) = delete;
  MemContender& operator=(const MemContender&) = delete;
  double bytes_moved() const override { return bytes_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<double> bytes_{0};
  std::vector<char> a_, b_;
  std::thread th_;
};

}  // namespace tpb
