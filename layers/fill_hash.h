// Deterministic, counter-based values for weights, KV caches and inputs. Element (row, col) of
// a full (unsharded) tensor has the same value on every rank and backend, so each rank can
// build only its shard and the unsharded reference can rebuild the whole tensor.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define TPB_HD __host__ __device__
#else
#define TPB_HD
#endif

namespace tpb {

// splitmix64 finaliser: cheap, well mixed, and identical on host and device.
TPB_HD inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-scale, scale): top 24 bits give an exactly representable fp32 fraction.
TPB_HD inline float hashed_value(uint64_t seed, uint64_t index, float scale) {
  uint64_t h = mix64(seed ^ mix64(index));
  float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return scale * (2.0f * u - 1.0f);
}

// A rectangular block of a full row-major tensor with `full_cols` columns, written into a
// destination with leading dimension `dst_ld`: dst[i*dst_ld + j] = value(row0+i, col0+j).
struct FillSpec {
  uint64_t seed = 0;
  float scale = 1.0f;
  int64_t full_cols = 0;
  int64_t row0 = 0, rows = 0;
  int64_t col0 = 0, cols = 0;
  int64_t dst_ld = 0;
  int64_t dst_offset = 0;  // elements from the buffer start to dst[0]
};

// The whole of a rows x cols tensor, densely stored: no shard offsets.
inline FillSpec whole_tensor_fill(uint64_t seed, float scale, int64_t rows, int64_t cols) {
  return FillSpec{seed, scale, cols, 0, rows, 0, cols, cols, 0};
}

// An e4m3 (fp8) tensor filled with scale s holds value / (s / 448): its values, in
// [-s, s), span e4m3's finite range, and s / 448 is the per-tensor scale a GEMM multiplies back.
TPB_HD inline float fp8_fill_scale(float fill_scale) {
  return fill_scale / 448.0f;
}
TPB_HD inline float fp8_fill_scale(const FillSpec& f) {
  return fp8_fill_scale(f.scale);
}

TPB_HD inline float fill_value(const FillSpec& f, int64_t i, int64_t j) {
  return hashed_value(f.seed, static_cast<uint64_t>((f.row0 + i) * f.full_cols + f.col0 + j),
                      f.scale);
}

}  // namespace tpb
