// The host reference's one parallel loop: contiguous ranges of [0, n) over std::threads, so the
// fp64 reference of a whole model step finishes in seconds on a many-core host.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace tpb::ref {

// `requested` threads, or the host's when it is 0 or less.
inline int host_threads(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// body(begin, end) on disjoint ranges covering [0, n); on the calling thread when one suffices.
template <class F>
void parallel_rows(int64_t n, int threads, F&& body) {
  const int64_t t = std::min<int64_t>(host_threads(threads), n);
  if (t <= 1) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(t));
  for (int64_t i = 0; i < t; ++i)
    pool.emplace_back([&body, i, t, n] { body(n * i / t, n * (i + 1) / t); });
  for (auto& th : pool) th.join();
}

}  // namespace tpb::ref
