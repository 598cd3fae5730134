// The verification fill (nccl-tests' idea): rank r's element i is a small integer v(r, i) in
// 1..13 and every expected output is computed exactly on the host. A sum takes at most
// kMaxAddends ranks' values per element (the others give 0), so every partial sum, in any
// order, is an integer <= 19 * 13 = 247 < 256 = 2^8: exact in bf16 (8 significant bits), fp16
// and fp32 at any rank count. An element's expected sum is never 0 and, past kMaxAddends
// ranks, holds at least two addends, so an output left unwritten counts as wrong.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "collectives/kinds/coll_kind.h"

namespace tpb {

inline float fill_value(int r, int64_t i) {
  return static_cast<float>((i * 7 + r * 3) % 13 + 1);
}

// 19 addends of at most 13 stay below 256, bf16's last exact integer step of 1.
inline constexpr int kMaxAddends = 19;

// A sum over n ranks takes element i from every stride-th rank (r + i = 0 mod stride), at most
// ceil(n / stride) <= kMaxAddends of them; stride 1 (every rank) up to 19 ranks. max and min
// do no arithmetic and keep every rank's value.
inline int sum_stride(int n) {
  return (n + kMaxAddends - 1) / kMaxAddends;
}

// Rank r's input element i for `op` over n ranks.
inline float input_value(const std::string& op, int n, int r, int64_t i) {
  if (op == "sum" && (i + r) % sum_stride(n) != 0) return 0.0f;
  return fill_value(r, i);
}

// Element i reduced with `op` over ranks 0..n-1.
inline float reduced_value(const std::string& op, int n, int64_t i) {
  float acc = input_value(op, n, 0, i);
  for (int q = 1; q < n; ++q) {
    const float v = input_value(op, n, q, i);
    acc = op == "sum" ? acc + v : op == "max" ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

inline void fill_rank_values(int r, int64_t count, float* dst) {
  for (int64_t i = 0; i < count; ++i) dst[i] = fill_value(r, i);
}

// The rank's own values at the start of the input buffer (the receive buffer when in place).
inline void fill_own_input(const CollVerify& v, float* send, float* recv) {
  float* dst = v.inplace ? recv : send;
  for (int64_t i = 0; i < v.counts.send; ++i) dst[i] = input_value(v.op, v.n, v.rank, i);
}

}  // namespace tpb
