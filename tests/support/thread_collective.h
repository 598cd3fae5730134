// A TP group of ranks run as threads of one process, for unit tests of the sharded step
// without MPI: all_reduce sums the ranks' buffers (fp32) in rank order, so every rank gets
// the same bits, as an MPI or NCCL sum over the same values would give.
#pragma once
#include <barrier>
#include <cstddef>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/collective.h"

namespace tpb::testing {

// What the ranks share: one buffer pointer per rank and a barrier.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : bufs_(size), sync_(size) {}
  int size() const { return static_cast<int>(bufs_.size()); }

  // Publish, wait for all, sum into a private copy, wait until everyone has read, write back.
  void all_reduce(int rank, float* buf, std::size_t count) {
    bufs_[rank] = buf;
    sync_.arrive_and_wait();
    std::vector<float> sum(count, 0.0f);
    for (float* b : bufs_)
      for (std::size_t i = 0; i < count; ++i) sum[i] += b[i];
    sync_.arrive_and_wait();
    for (std::size_t i = 0; i < count; ++i) buf[i] = sum[i];
  }
  void barrier() { sync_.arrive_and_wait(); }
  // A rank that failed leaves the group, so its peers do not wait on it forever.
  void leave() { sync_.arrive_and_drop(); }

 private:
  std::vector<float*> bufs_;
  std::barrier<> sync_;
};

class ThreadCollective final : public Collective {
 public:
  ThreadCollective(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  std::string name() const override { return "threads"; }
  void all_reduce(void* buf, std::size_t count, DType t) override {
    if (t != DType::fp32) throw std::logic_error("ThreadCollective sums fp32 only");
    g_.all_reduce(rank_, static_cast<float*>(buf), count);
  }
  void barrier() override { g_.barrier(); }

 private:
  ThreadGroup& g_;
  int rank_;
};

// Runs body(rank, collective) on `size` threads; rethrows the first rank's exception.
inline void run_ranks(int size, const std::function<void(int, Collective&)>& body) {
  ThreadGroup group(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&group, &errors, &body, r] {
      ThreadCollective coll(group, r);
      try {
        body(r, coll);
      } catch (...) {
        errors[r] = std::current_exception();
        group.leave();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace tpb::testing
