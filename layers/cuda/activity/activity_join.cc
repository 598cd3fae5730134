// ActivityJoin: an op's interval is the hull of the work its API calls launched.
#include "layers/cuda/activity/activity_join.h"

#include <algorithm>

namespace tpb {

void ActivityJoin::add_work(uint32_t correlation, uint64_t start_ns, uint64_t end_ns) {
  work_.push_back(Work{correlation, start_ns, std::max(start_ns, end_ns)});
}

void ActivityJoin::add_external(uint32_t correlation, uint64_t external_id) {
  external_[correlation] = external_id;
}

void ActivityJoin::add_launch(uint32_t correlation, uint64_t end_ns) {
  launch_end_[correlation] = end_ns;
}

void ActivityJoin::join() {
  for (const Work& w : work_) {
    const auto call = external_.find(w.correlation);
    if (call == external_.end()) {
      ++unclaimed_;
      continue;
    }
    const auto call_end = launch_end_.find(w.correlation);
    const uint64_t launched = call_end == launch_end_.end() ? 0 : call_end->second;
    const auto [it, fresh] = ops_.try_emplace(call->second, OpSpan{w.start, w.end, launched});
    if (fresh) continue;
    OpSpan& op = it->second;
    if (w.start < op.first) op.first = w.start, op.launched = launched;
    op.last = std::max(op.last, w.end);
  }
  work_.clear();
  external_.clear();
  launch_end_.clear();
}

std::pair<int64_t, int64_t> ActivityJoin::interval(uint64_t external_id) const {
  const auto it = ops_.find(external_id);
  if (it == ops_.end()) return {0, 0};
  return {static_cast<int64_t>(it->second.first), static_cast<int64_t>(it->second.last)};
}

int64_t ActivityJoin::launched(uint64_t external_id) const {
  const auto it = ops_.find(external_id);
  return it == ops_.end() ? 0 : static_cast<int64_t>(it->second.launched);
}

void ActivityJoin::forget_below(uint64_t external_id) {
  std::erase_if(ops_, [&](const auto& kv) { return kv.first < external_id; });
}

uint64_t ActivitySlots::begin(std::size_t slot) {
  if (slot / 2 >= ids_.size()) return 0;
  ids_[slot / 2] = ++next_;
  return next_;
}

void fill_intervals(const ActivitySlots& slots, ActivityJoin& join, std::size_t first,
                    std::size_t count, int64_t* host_ns, int64_t* launched_ns) {
  uint64_t lowest = UINT64_MAX;
  for (std::size_t p = 0; 2 * p + 1 < count; ++p) {
    const uint64_t id = slots.id(first / 2 + p);
    const auto [t0, t1] = id ? join.interval(id) : std::pair<int64_t, int64_t>{0, 0};
    host_ns[2 * p] = t0;
    host_ns[2 * p + 1] = t1;
    if (launched_ns) launched_ns[p] = id ? join.launched(id) : 0;
    if (id) lowest = std::min(lowest, id);
  }
  if (lowest != UINT64_MAX) join.forget_below(lowest);
}

}  // namespace tpb
