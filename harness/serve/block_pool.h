// The paged KV cache's free list, as the scheduler keeps it: block ids in [0, capacity), each
// owned by at most one sequence. Lowest free id first, so that the block tables (which the
// step executes on a real cache) are the same on every rank and a freed block is reused first.
#pragma once
#include <cstdint>
#include <set>
#include <vector>

namespace tpb {

class BlockPool {
 public:
  explicit BlockPool(int64_t capacity = 0);
  int64_t capacity() const { return capacity_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_blocks() const { return capacity_ - free_blocks(); }
  // Appends n blocks to `table`; throws std::logic_error when fewer are free (the scheduler
  // checks first, so that is a broken invariant, not bad input).
  void take(int64_t n, std::vector<int32_t>& table);
  // Returns every block of `table` to the pool and empties it.
  void give_back(std::vector<int32_t>& table);

 private:
  int64_t capacity_ = 0;
  std::set<int32_t> free_;
};

// Blocks that hold `positions` positions.
inline int64_t blocks_for(int64_t positions, int64_t block_tokens) {
  return (positions + block_tokens - 1) / block_tokens;
}

}  // namespace tpb
