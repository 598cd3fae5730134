// poll_until (poll_wait.h). No sleep between polls: the wait ends a step, and a sleep would
// add its wake-up latency to every step's host gap. CUPTI keeps no record of the polls
// (activity/cupti_activity.cc turns the query calls' records off).
#include "layers/cuda/poll_wait.h"

#include <chrono>
#include <thread>

namespace tpb {

void poll_until(const std::function<bool()>& done, const std::function<void(double)>& hook) {
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    if (hook) hook(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::this_thread::yield();
  }
}

}  // namespace tpb
