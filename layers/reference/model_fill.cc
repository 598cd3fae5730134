// Host copies of TpModel's seeded tensors (see model_fill.h for why they are not shared).
#include "layers/reference/model_fill.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "layers/cpu/target_clones.h"
#include "layers/fill_hash.h"
#include "layers/reference/dtype_round.h"
#include "layers/reference/parallel_rows.h"

namespace tpb::ref {

namespace {

// One row of hashed values; hashing is most of the reference's time on an 8B model. The
// AVX-512 twin vectorises the 64-bit multiplies (vpmullq), as the CPU backend's fill does; both
// give the same bits (the hash is integer arithmetic and its float formula is exact up to the
// last multiply).
void hash_row(float* d, uint64_t seed, uint64_t index0, int64_t n, float scale) {
  for (int64_t j = 0; j < n; ++j)
    d[j] = hashed_value(seed, index0 + static_cast<uint64_t>(j), scale);
}

#if defined(TPB_HAVE_V4)
TPB_TARGET_V4 void hash_row_v4(float* d, uint64_t seed, uint64_t index0, int64_t n, float scale) {
  for (int64_t j = 0; j < n; ++j)
    d[j] = hashed_value(seed, index0 + static_cast<uint64_t>(j), scale);
}
#endif

// One row as the device stores it.
void device_row(float* d, uint64_t seed, float scale, int64_t cols, int64_t row, DType t) {
  auto row_fn = &hash_row;
#if defined(TPB_HAVE_V4)
  if (cpu_has_x86_64_v4()) row_fn = &hash_row_v4;
#endif
  // fill_value() of FillSpec{seed, scale, cols, row0, rows, 0, cols, cols, 0} at (row, 0..cols).
  row_fn(d, seed, static_cast<uint64_t>(row * cols), cols, scale);
  if (t != DType::fp32)
    for (int64_t j = 0; j < cols; ++j) d[j] = round_to_dtype(d[j], t);
}

}  // namespace

uint64_t tensor_seed(uint64_t model_seed, int64_t layer, Tensor t) {
  // Layer stride 64 leaves room for the step's end ids (32, 33) at layer 0.
  return mix64(model_seed * 1000003ULL + static_cast<uint64_t>(layer) * 64 +
               static_cast<uint64_t>(t));
}

float init_scale(int64_t fan_in) {
  return std::sqrt(3.0f / static_cast<float>(fan_in));
}

void fill_rows(float* dst, uint64_t seed, float scale, int64_t cols, int64_t row0, int64_t rows,
               DType t, int threads) {
  parallel_rows(rows, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) device_row(dst + i * cols, seed, scale, cols, row0 + i, t);
  });
}

void fill_rows(double* dst, uint64_t seed, float scale, int64_t cols, int64_t row0, int64_t rows,
               DType t, int threads) {
  parallel_rows(rows, threads, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<std::size_t>(cols));
    for (int64_t i = r0; i < r1; ++i) {
      device_row(row.data(), seed, scale, cols, row0 + i, t);
      std::copy(row.begin(), row.end(), dst + i * cols);
    }
  });
}

}  // namespace tpb::ref
