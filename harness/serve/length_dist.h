// Request lengths for `tpbench serve` (--prompt-len, --output-len): a fixed N, uniform:A..B,
// normal:MEAN,SD (rounded, clamped to >= 1), or mix:64@0.9,1024@0.1 (a length with its
// probability; the weights must sum to 1 within 1e-6).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tpb {

struct LengthDist {
  enum class Kind { fixed, uniform, normal, mix };
  Kind kind = Kind::fixed;
  int64_t a = 1, b = 1;          // fixed: a; uniform: [a, b] inclusive
  double mean = 0, sd = 0;       // normal
  std::vector<int64_t> lengths;  // mix
  std::vector<double> weights;   // mix, same size as lengths

  int64_t sample(std::mt19937_64& rng) const;  // always >= 1
  int64_t max() const;       // the largest length it can give (normal: mean + 6 sd, rounded up)
  std::string text() const;  // the spec it was parsed from, canonical
};

// Throws BadInput naming `field` (e.g. "--prompt-len") on anything else.
LengthDist parse_length_dist(const std::string& text, const std::string& field);

}  // namespace tpb
