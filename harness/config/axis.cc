// Axis grammar. Strict on purpose: a sweep that silently dropped a malformed value would
// report fewer points than asked for, and nobody reads the count.
#include "harness/config/axis.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <set>

#include "base/errors.h"

namespace tpb {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& what) {
  throw BadInput(field + ": " + what);
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

int64_t strict_int(const std::string& text, const std::string& field) {
  const std::string t = trim(text);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || end != t.c_str() + t.size() || errno == ERANGE)
    bad(field, "expected an integer (got '" + text + "')");
  return v;
}

// One item of an integer axis, appended to `out`.
void expand_int_item(const std::string& item, const std::string& field, std::vector<int64_t>& out) {
  const auto dots = item.find("..");
  if (dots == std::string::npos) {
    out.push_back(strict_int(item, field));
    return;
  }
  const int64_t lo = strict_int(item.substr(0, dots), field);
  std::string rest = item.substr(dots + 2);
  char kind = '+';
  int64_t step = 1;
  if (const auto colon = rest.find(':'); colon != std::string::npos) {
    const std::string s = trim(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (s.size() < 2 || (s[0] != 'x' && s[0] != '*' && s[0] != '+'))
      bad(field, "range step must be xF, *F or +S, e.g. 1..256:x2 or 1..16:+4 (got '" + s + "')");
    kind = s[0] == '+' ? '+' : 'x';
    step = strict_int(s.substr(1), field);
  }
  const int64_t hi = strict_int(rest, field);
  if (lo > hi) bad(field, "range '" + item + "' runs backwards");
  if (kind == 'x' && (step < 2 || lo < 1))
    bad(field, "geometric range '" + item + "' needs a factor >= 2 and a start >= 1");
  if (kind == '+' && step < 1) bad(field, "arithmetic range '" + item + "' needs a step >= 1");
  for (int64_t v = lo; v <= hi;) {
    out.push_back(v);
    if (out.size() > kMaxAxisValues)
      bad(field, "expands to more than " + std::to_string(kMaxAxisValues) + " values");
    // Stop before the next value would overflow; hi bounds it anyway.
    if (kind == 'x' ? v > hi / step : v > hi - step) break;
    v = kind == 'x' ? v * step : v + step;
  }
}

template <class T>
std::vector<T> dedupe(const std::vector<T>& v) {
  std::vector<T> out;
  std::set<T> seen;
  for (const T& x : v)
    if (seen.insert(x).second) out.push_back(x);
  return out;
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  for (;;) {
    const auto at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::vector<int64_t> expand_int_axis(const std::string& text, const std::string& field) {
  std::vector<int64_t> out;
  for (const std::string& item : split_list(text, ',')) {
    if (trim(item).empty()) bad(field, "empty item in '" + text + "'");
    expand_int_item(item, field, out);
  }
  out = dedupe(out);
  if (out.size() > kMaxAxisValues)
    bad(field, "expands to more than " + std::to_string(kMaxAxisValues) + " values");
  return out;
}

std::vector<std::string> expand_string_axis(const std::string& text, const std::string& field,
                                            char sep, bool allow_empty) {
  std::vector<std::string> out;
  for (const std::string& item : split_list(text, sep)) {
    const std::string t = trim(item);
    if (t.empty() && !allow_empty) bad(field, "empty item in '" + text + "'");
    out.push_back(t);
  }
  return dedupe(out);
}

std::vector<std::string> axis_values(const nlohmann::json& value, const std::string& field,
                                     bool integer) {
  std::vector<std::string> out;
  auto add_text = [&](const std::string& t) {
    if (integer) {
      for (int64_t v : expand_int_axis(t, field)) out.push_back(std::to_string(v));
    } else {
      for (auto& s : expand_string_axis(t, field)) out.push_back(s);
    }
  };
  if (value.is_array()) {
    if (value.empty()) bad(field, "empty list");
    for (const auto& e : value) add_text(e.is_string() ? e.get<std::string>() : e.dump());
  } else {
    add_text(value.is_string() ? value.get<std::string>() : value.dump());
  }
  return dedupe(out);
}

int64_t parse_size_suffix(const std::string& text, const std::string& field) {
  std::string t = trim(text);
  int64_t mult = 1;
  if (!t.empty()) {
    const char last = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
    if (last == 'K' || last == 'M' || last == 'G') {
      mult = last == 'K' ? (1LL << 10) : last == 'M' ? (1LL << 20) : (1LL << 30);
      t.pop_back();
    }
  }
  const int64_t v = strict_int(t, field);
  if (v < 0 || v > std::numeric_limits<int64_t>::max() / mult)
    bad(field, "size out of range (got '" + text + "')");
  return v * mult;
}

std::string format_size(int64_t bytes) {
  if (bytes > 0 && bytes % (1LL << 30) == 0) return std::to_string(bytes >> 30) + "G";
  if (bytes > 0 && bytes % (1LL << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes > 0 && bytes % (1LL << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

}  // namespace tpb
