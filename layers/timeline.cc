// Resolution of device stamps into clock-domain records.
#include "layers/timeline.h"

namespace tpb {

std::vector<SegmentRecord> Timeline::resolve(const ClockSkew& skew) const {
  std::vector<int64_t> ns(2 * n_);
  if (n_ > 0) dev_.collect_marks(0, 2 * n_, ns.data());
  std::vector<SegmentRecord> out(n_);
  for (std::size_t i = 0; i < n_; ++i) {
    const SegmentMeta& m = meta_[i];
    out[i] = SegmentRecord{skew.apply(static_cast<double>(ns[2 * i]) * 1e-9),
                           skew.apply(static_cast<double>(ns[2 * i + 1]) * 1e-9),
                           m.step,
                           m.layer,
                           m.op,
                           static_cast<uint8_t>(op_is_collective(m.op) ? 1 : 0)};
  }
  return out;
}

}  // namespace tpb
