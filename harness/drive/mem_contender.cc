// MemContender: memcpy between two buffers far larger than the LLC, until destroyed.
#include "harness/drive/mem_contender.h"

#include <algorithm>
#include <cstring>

namespace tpb {
namespace {

// Copied and counted in 16 MiB chunks: one copy of a buffer 4x a large LLC takes longer than a
// short measured window, which would then see no bytes moved at all.
constexpr std::size_t kChunk = std::size_t{16} << 20;

}  // namespace

std::size_t mem_contend_buffer_bytes(double llc_bytes) {
  return static_cast<std::size_t>(std::max(4.0 * llc_bytes, 128e6));
}

MemContender::MemContender(std::size_t buffer_bytes) {
  const std::size_t n = buffer_bytes;
  a_.assign(n, 1);
  b_.assign(n, 2);
  th_ = std::thread([this, n] {
    while (!stop_.load(std::memory_order_relaxed)) {
      for (std::size_t off = 0; off < n && !stop_.load(std::memory_order_relaxed); off += kChunk) {
        const std::size_t len = std::min(kChunk, n - off);
        std::memcpy(b_.data() + off, a_.data() + off, len);
        bytes_.store(bytes_.load(std::memory_order_relaxed) + 2.0 * static_cast<double>(len),
                     std::memory_order_relaxed);
      }
    }
  });
}

MemContender::~MemContender() {
  stop_.store(true);
  if (th_.joinable()) th_.join();
}

}  // namespace tpb
