// Per-op device intervals from a tracer's records (CUPTI's activity API, cupti_activity.h),
// joined on the host: host-only, so it is built and unit-tested where no GPU or CUPTI is.
//
// CUPTI reports a kernel (memcpy, memset) with the correlation id of the API call that
// launched it, and, for a call made while tpbench had pushed an external id (the op's, in
// Device::activity_begin), an external-correlation record mapping that call's id to the op's.
// The two kinds arrive in buffers in no promised order, so they are kept until join().
// A launch call's own record (its host start and end) says when the host let the op's first
// kernel go, which separates a gap the device spent waiting for a launch from one it spent
// between kernels already queued (Device::collect_activity's launched_ns).
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tpb {

class ActivityJoin {
 public:
  // A piece of device work: [start_ns, end_ns) on the tracer's clock, launched by the API call
  // `correlation`.
  void add_work(uint32_t correlation, uint64_t start_ns, uint64_t end_ns);
  // The API call `correlation` was made inside op `external_id`.
  void add_external(uint32_t correlation, uint64_t external_id);
  // The launch call `correlation` (a kernel launch, an async copy or set) returned to the host
  // at end_ns, on the work's clock.
  void add_launch(uint32_t correlation, uint64_t end_ns);

  // Widens each op's interval by the work its calls launched, then drops every record it
  // holds. Call it when all work issued so far has finished and its records were flushed:
  // work whose call no op claimed (stamps, graph replays, which CUPTI ties to the launch of
  // the whole graph) is then counted in unclaimed() and forgotten.
  void join();

  // The op's first start and last end, or {0, 0} where none of its work was recorded.
  std::pair<int64_t, int64_t> interval(uint64_t external_id) const;
  // When the call that launched the op's first work returned; 0 where that call's record
  // was not delivered (or the op has no work).
  int64_t launched(uint64_t external_id) const;
  // Forgets the intervals of ops below `external_id` (ids only grow; see CudaDevice).
  void forget_below(uint64_t external_id);

  std::size_t unclaimed() const { return unclaimed_; }
  std::size_t ops() const { return ops_.size(); }

 private:
  struct Work {
    uint32_t correlation;
    uint64_t start, end;
  };
  struct OpSpan {
    uint64_t first, last, launched;
  };
  std::vector<Work> work_;
  std::unordered_map<uint32_t, uint64_t> external_;    // API call -> op
  std::unordered_map<uint32_t, uint64_t> launch_end_;  // launch call -> when it returned
  std::unordered_map<uint64_t, OpSpan> ops_;
  std::size_t unclaimed_ = 0;
};

// Which op id each slot pair holds (Device::activity_begin gets slot 2i, the pair's first).
// Ids only grow, so a pair reused after Timeline::clear() never reads an earlier op's records.
class ActivitySlots {
 public:
  void reserve(std::size_t slots) { ids_.assign((slots + 1) / 2, 0); }
  // A fresh id for the op opening at `slot`; 0 (no op) where the slot is past the reserve.
  uint64_t begin(std::size_t slot);
  uint64_t id(std::size_t pair) const { return pair < ids_.size() ? ids_[pair] : 0; }

 private:
  std::vector<uint64_t> ids_;
  uint64_t next_ = 0;
};

// Device::collect_activity's answer from a join: per pair of slots [first, first + count),
// its op's first start and last end, {0, 0} where nothing was recorded, and (where
// launched_ns is not null) at launched_ns[pair] when its first launch call returned, 0 where
// unknown. Then forgets the ops before the first pair's (collect is asked again only for
// pairs at or after it).
void fill_intervals(const ActivitySlots& slots, ActivityJoin& join, std::size_t first,
                    std::size_t count, int64_t* host_ns, int64_t* launched_ns = nullptr);

}  // namespace tpb
