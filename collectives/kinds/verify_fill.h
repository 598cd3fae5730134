// The verification fill (nccl-tests' idea): rank r's element i is a small integer v(r, i) in
// 1..13, so sums over up to 1290 ranks stay exact in fp32 and bf16 holds them too at small n;
// every expected output is computed exactly on the host. No value is 0, so an output element
// left unwritten counts as wrong.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "collectives/kinds/coll_kind.h"

namespace tpb {

inline float fill_value(int r, int64_t i) {
  return static_cast<float>((i * 7 + r * 3) % 13 + 1);
}

// Element i reduced with `op` over ranks 0..n-1.
inline float reduced_value(const std::string& op, int n, int64_t i) {
  float acc = fill_value(0, i);
  for (int q = 1; q < n; ++q) {
    const float v = fill_value(q, i);
    acc = op == "sum" ? acc + v : op == "max" ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

inline void fill_rank_values(int r, int64_t count, float* dst) {
  for (int64_t i = 0; i < count; ++i) dst[i] = fill_value(r, i);
}

// The rank's own values at the start of the input buffer (the receive buffer when in place).
inline void fill_own_input(const CollVerify& v, float* send, float* recv) {
  fill_rank_values(v.rank, v.counts.send, v.inplace ? recv : send);
}

}  // namespace tpb
