// The cuda backend's one blocking wait, as nccl-tests' testStreamSynchronize waits: poll the
// work's state (cudaStreamQuery, cudaEventQuery), and between polls call the collective's hook,
// which throws CollectiveTimeout when a collective is overdue (or its async error), so a rank
// whose peer hung ends with exit 3 instead of blocking in the driver forever. Host-only, so the
// loop is unit-tested with a fake query; cuda_wait.h binds it to streams and events.
#pragma once
#include <functional>

namespace tpb {

// Returns once done() is true. done() throws on a device error. hook(waited_s), when set, is
// called after each poll that found the work unfinished, with the seconds this wait has
// waited (a graph replay's collectives are bounded only by that); whatever it throws ends
// the wait.
void poll_until(const std::function<bool()>& done, const std::function<void(double)>& hook);

}  // namespace tpb
