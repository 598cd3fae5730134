// The paged KV cache's free list (see block_pool.h).
#include "harness/serve/block_pool.h"

#include <stdexcept>
#include <string>

namespace tpb {

BlockPool::BlockPool(int64_t capacity) : capacity_(capacity) {
  for (int64_t b = 0; b < capacity; ++b) free_.insert(free_.end(), static_cast<int32_t>(b));
}

void BlockPool::take(int64_t n, std::vector<int32_t>& table) {
  if (n > free_blocks())
    throw std::logic_error("serve: asked for " + std::to_string(n) + " KV blocks with " +
                           std::to_string(free_blocks()) + " free");
  for (int64_t i = 0; i < n; ++i) {
    table.push_back(*free_.begin());
    free_.erase(free_.begin());
  }
}

void BlockPool::give_back(std::vector<int32_t>& table) {
  for (const int32_t b : table)
    if (!free_.insert(b).second)
      throw std::logic_error("serve: KV block " + std::to_string(b) + " freed twice");
  table.clear();
}

}  // namespace tpb
