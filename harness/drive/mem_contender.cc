// MemContender: memcpy between two buffers far larger than the LLC, until destroyed.
#include "harness/drive/mem_contender.h"

#include <algorithm>
#include <cstring>

namespace tpb {

std::size_t mem_contend_buffer_bytes(double llc_bytes) {
  return static_cast<std::size_t>(std::max(4.0 * llc_bytes, 128e6));
}

MemContender::MemContender(std::size_t buffer_bytes) {
  const std::size_t n = buffer_bytes;
  a_.assign(n, 1);
  b_.assign(n, 2);
  th_ = std::thread([this, n] {
    while (!stop_.load(std::memory_order_relaxed)) {
      std::memcpy(b_.data(), a_.data(), n);
      bytes_.store(bytes_.load(std::memory_order_relaxed) + 2.0 * static_cast<double>(n),
                   std::memory_order_relaxed);
    }
  });
}

MemContender::~MemContender() {
  stop_.store(true);
  if (th_.joinable()) th_.join();
}

}  // namespace tpb
