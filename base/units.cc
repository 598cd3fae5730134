#include "base/units.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace tpb {

namespace {

// Seconds per unit; the longest suffix first, so "ms" is not read as "s".
struct TimeUnit {
  const char* suffix;
  double seconds;
};
constexpr TimeUnit kTimeUnits[] = {{"min", 60},       {"ms", 1e-3}, {"us", 1e-6},
                                   {"\u00b5s", 1e-6}, {"ns", 1e-9}, {"s", 1}};

std::optional<double> finite_number(const std::string& s) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(x))
    return std::nullopt;
  return x;
}

}  // namespace

double unit_seconds(const std::string& unit) {
  for (const TimeUnit& u : kTimeUnits)
    if (unit == u.suffix) return u.seconds;
  throw std::logic_error("time: unknown unit '" + unit + "'");
}

std::optional<double> parse_time(const std::string& text, const std::string& unit) {
  const double scale = unit_seconds(unit);
  for (const TimeUnit& u : kTimeUnits) {
    const std::string suf = u.suffix;
    if (text.size() > suf.size() && text.compare(text.size() - suf.size(), suf.size(), suf) == 0) {
      const auto x = finite_number(text.substr(0, text.size() - suf.size()));
      if (!x) return std::nullopt;
      return *x * u.seconds / scale;
    }
  }
  return finite_number(text);  // a bare number: the option's own unit
}

}  // namespace tpb
