// The two passes `collectives` and `calibrate` time a collective in. The timed pass is
// nccl-tests' loop: one stamp before the first call and one after the last (on CUDA two stamps
// on the stream where nccl-tests records its two events; on the CPU two clock reads), time =
// elapsed / iters, nothing stamped and no host wait of the harness's between calls. The
// stamped pass runs after it, apart, for what needs each iteration's ends on every rank
// (percentiles, arrival skew, the wait/transfer split): a stamp before and after each call.
#pragma once
#include <functional>
#include <vector>

#include "layers/device.h"
#include "layers/timeline.h"

namespace tpb {

// Issues `iters` calls back to back; returns (stamp after - stamp before) / iters in seconds of
// the device's mark clock. `calls(n)` issues all n (a collective may queue them without waits).
double timed_pass(Device& dev, int iters, const std::function<void(int)>& calls);

// `iters` calls, each between two stamps; the segments on the host clock (not yet synced).
std::vector<SegmentRecord> stamped_pass(Device& dev, int iters, const std::function<void()>& call);

}  // namespace tpb
