// Parsing and drawing request lengths (--prompt-len, --output-len).
#include "harness/serve/length_dist.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/errors.h"
#include "harness/serve/serve_random.h"

namespace tpb {
namespace {

const char* kForms = "N, uniform:A..B, normal:MEAN,SD or mix:LEN@P,...";

[[noreturn]] void bad(const std::string& field, const std::string& what, const std::string& text) {
  throw BadInput(field + ": " + what + " (got '" + text + "'; the forms are " + kForms + ")");
}

// Whole-string parses: "12x" or "" are errors, not 12 or 0.
bool parse_int(const std::string& s, int64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}
bool parse_double(const std::string& s, double& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

int64_t length_of(const std::string& s, const std::string& field, const std::string& text) {
  int64_t v = 0;
  if (!parse_int(s, v) || v < 1) bad(field, "'" + s + "' is not a length >= 1", text);
  return v;
}

// Shortest text that reads back as the same double, so text() round-trips.
std::string num(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

LengthDist parse_uniform(const std::string& body, const std::string& field,
                         const std::string& text) {
  const auto dots = body.find("..");
  if (dots == std::string::npos) bad(field, "uniform needs A..B", text);
  LengthDist d;
  d.kind = LengthDist::Kind::uniform;
  d.a = length_of(body.substr(0, dots), field, text);
  d.b = length_of(body.substr(dots + 2), field, text);
  if (d.a > d.b) bad(field, "uniform needs A <= B", text);
  return d;
}

LengthDist parse_normal(const std::string& body, const std::string& field,
                        const std::string& text) {
  const auto comma = body.find(',');
  LengthDist d;
  d.kind = LengthDist::Kind::normal;
  if (comma == std::string::npos || !parse_double(body.substr(0, comma), d.mean) ||
      !parse_double(body.substr(comma + 1), d.sd))
    bad(field, "normal needs MEAN,SD as numbers", text);
  if (d.mean < 1 || d.sd < 0) bad(field, "normal needs MEAN >= 1 and SD >= 0", text);
  return d;
}

LengthDist parse_mix(const std::string& body, const std::string& field, const std::string& text) {
  LengthDist d;
  d.kind = LengthDist::Kind::mix;
  double sum = 0;
  size_t start = 0;
  while (start <= body.size()) {
    const auto end = std::min(body.find(',', start), body.size());
    const std::string item = body.substr(start, end - start);
    const auto at = item.find('@');
    double w = 0;
    if (at == std::string::npos || !parse_double(item.substr(at + 1), w) || w <= 0 || w > 1)
      bad(field, "mix item '" + item + "' needs LEN@P with 0 < P <= 1", text);
    d.lengths.push_back(length_of(item.substr(0, at), field, text));
    d.weights.push_back(w);
    sum += w;
    start = end + 1;
  }
  if (std::abs(sum - 1.0) > 1e-6) bad(field, "mix weights sum to " + num(sum) + ", not 1", text);
  return d;
}

}  // namespace

LengthDist parse_length_dist(const std::string& text, const std::string& field) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    LengthDist d;
    d.a = d.b = length_of(text, field, text);
    return d;
  }
  const std::string kind = text.substr(0, colon), body = text.substr(colon + 1);
  if (kind == "uniform") return parse_uniform(body, field, text);
  if (kind == "normal") return parse_normal(body, field, text);
  if (kind == "mix") return parse_mix(body, field, text);
  bad(field, "unknown distribution '" + kind + "'", text);
}

int64_t LengthDist::sample(std::mt19937_64& rng) const {
  switch (kind) {
    case Kind::fixed:
      return a;
    case Kind::uniform:
      return draw_int(rng, a, b);
    case Kind::normal: {
      // Clamped to [1, max()] so that max() holds for every draw (the cache is sized by it).
      const auto v = static_cast<int64_t>(std::llround(mean + sd * draw_normal(rng)));
      return std::clamp<int64_t>(v, 1, max());
    }
    case Kind::mix: {
      // Inverse CDF over the weights; a u beyond the rounded sum falls on the last length.
      const double u = draw_unit(rng);
      double acc = 0;
      for (size_t i = 0; i < lengths.size(); ++i) {
        acc += weights[i];
        if (u < acc) return lengths[i];
      }
      return lengths.back();
    }
  }
  return a;
}

int64_t LengthDist::max() const {
  switch (kind) {
    case Kind::fixed:
      return a;
    case Kind::uniform:
      return b;
    case Kind::normal:
      return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(mean + 6 * sd)));
    case Kind::mix:
      return *std::max_element(lengths.begin(), lengths.end());
  }
  return a;
}

std::string LengthDist::text() const {
  switch (kind) {
    case Kind::fixed:
      return std::to_string(a);
    case Kind::uniform:
      return "uniform:" + std::to_string(a) + ".." + std::to_string(b);
    case Kind::normal:
      return "normal:" + num(mean) + "," + num(sd);
    case Kind::mix: {
      std::string s = "mix:";
      for (size_t i = 0; i < lengths.size(); ++i)
        s += (i ? "," : "") + std::to_string(lengths[i]) + "@" + num(weights[i]);
      return s;
    }
  }
  return "";
}

}  // namespace tpb
