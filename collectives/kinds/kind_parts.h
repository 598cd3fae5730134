// Entry parts that several collective kinds share: where two kinds move data the same way,
// their element split or bus factor is one function (derivations in collectives/bus_bandwidth.h).
#pragma once
#include <cstdint>

#include "collectives/kinds/coll_kind.h"

namespace tpb {

// Each rank's send and receive buffers hold all of S (all_reduce, broadcast, reduce).
inline CollElements whole_message(int64_t count, int /*n*/) {
  return {count, count, count};
}

// S rounded down to n equal blocks, for the kinds that split or join them.
inline int64_t whole_blocks(int64_t count, int n) {
  return count - count % n;
}

// Ring: each rank sends (n-1) chunks of S/n -> (n-1)/n (reduce_scatter, all_gather).
inline double ring_block_factor(int n) {
  const double d = static_cast<double>(n);
  return (d - 1.0) / d;
}

// Pipelined, every link carries S once -> 1 (broadcast, reduce).
inline double pipelined_factor(int /*n*/) {
  return 1.0;
}

}  // namespace tpb
