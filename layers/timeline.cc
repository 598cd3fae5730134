// Resolution of device stamps and activity records into clock-domain records.
#include "layers/timeline.h"

namespace tpb {

const char* stamp_level_name(StampLevel l) {
  return l == StampLevel::ops ? "ops" : "collectives";
}

namespace {

// Under StampLevel::collectives: whether each run gives way to its ops, which it does only
// when the device recorded every op inside it (a replayed CUDA graph's kernels, for one, carry
// no record of the op that captured them). Indexed like the segments; true for a run to keep.
std::vector<bool> runs_to_keep(const std::vector<SegmentMeta>& meta, std::size_t n, bool have,
                               const std::vector<int64_t>& act) {
  std::vector<bool> keep(n, false);
  std::size_t run = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (meta[i].source == SegmentSource::run) {
      run = i;
      keep[i] = false;
    } else if (meta[i].source == SegmentSource::activity && run < n) {
      const bool recorded = have && act[2 * i] != 0 && act[2 * i + 1] >= act[2 * i];
      if (!recorded) keep[run] = true;
    }
  }
  return keep;  // a run with no op inside it holds nothing and is dropped
}

}  // namespace

std::vector<SegmentRecord> Timeline::resolve(const ClockSkew& skew) const {
  std::vector<int64_t> ns(2 * n_), act, launched;
  if (n_ > 0) dev_.collect_marks(0, 2 * n_, ns.data());
  bool have = false;
  if (level_ == StampLevel::collectives && n_ > 0) {
    act.assign(2 * n_, 0);
    launched.assign(n_, 0);
    have = dev_.collect_activity(0, 2 * n_, act.data(), launched.data());
  }
  const std::vector<bool> keep = runs_to_keep(meta_, n_, have, act);
  std::vector<SegmentRecord> out;
  out.reserve(n_);
  bool in_kept_run = false;
  for (std::size_t i = 0; i < n_; ++i) {
    const SegmentMeta& m = meta_[i];
    const int64_t* ends = ns.data() + 2 * i;
    int64_t launch_ns = 0;
    if (m.source == SegmentSource::run) {
      in_kept_run = keep[i];
      if (!in_kept_run) continue;
    } else if (m.source == SegmentSource::activity) {
      if (in_kept_run) continue;
      ends = act.data() + 2 * i;
      launch_ns = launched[i];
    } else {
      in_kept_run = false;
    }
    out.push_back(
        SegmentRecord{skew.apply(static_cast<double>(ends[0]) * 1e-9),
                      skew.apply(static_cast<double>(ends[1]) * 1e-9), m.step, m.layer, m.op,
                      static_cast<uint8_t>(op_is_collective(m.op) ? 1 : 0),
                      launch_ns > 0 ? skew.apply(static_cast<double>(launch_ns) * 1e-9) : 0.0});
  }
  return out;
}

}  // namespace tpb
