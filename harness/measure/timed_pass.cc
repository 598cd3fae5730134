// The timed pass and the stamped pass (timed_pass.h): the marks' slots are the pass's own;
// both synchronize once, after their last call.
#include "harness/measure/timed_pass.h"

#include <cstdint>

#include "base/errors.h"

namespace tpb {

double timed_pass(Device& dev, int iters, const std::function<void(int)>& calls) {
  TPB_ASSERT(iters > 0, "timed pass without iterations");
  dev.reserve_marks(2);
  dev.mark(0);
  calls(iters);
  dev.mark(1);
  dev.synchronize();
  int64_t ns[2] = {0, 0};
  dev.collect_marks(0, 2, ns);
  return static_cast<double>(ns[1] - ns[0]) * 1e-9 / iters;
}

std::vector<SegmentRecord> stamped_pass(Device& dev, int iters, const std::function<void()>& call) {
  Timeline tl(dev, static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    const std::size_t k = tl.open(Op::allreduce_attn, 0, i);
    call();
    tl.close(k);
  }
  dev.synchronize();
  return tl.resolve();
}

}  // namespace tpb
