// Strict conversions for config values.
#include "harness/config/config_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "base/did_you_mean.h"
#include "base/errors.h"

namespace tpb {

std::string field_name(const std::string& key) {
  std::string f = "--" + key;
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

namespace {

[[noreturn]] void bad(const std::string& key, const std::string& what) {
  throw BadInput(field_name(key) + ": " + what);
}

std::string as_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

double strict_double(const std::string& key, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(x))
    bad(key, "expected a number (got '" + s + "')");
  return x;
}

// Strings are echoed into results.json, and nlohmann refuses to write invalid UTF-8: refuse it
// here, naming the field, instead of failing on one rank when the results are written.
std::string utf8_string(const std::string& key, const nlohmann::json& v) {
  std::string s = v.get<std::string>();
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::type_error&) {
    bad(key, "not valid UTF-8 text");
  }
  return s;
}

// The text of a numeric value (the CLI passes strings); `what` names the type in the error.
std::string number_text(const std::string& key, const nlohmann::json& v, const char* what) {
  if (v.is_boolean() || v.is_object() || v.is_array())
    bad(key, std::string("expected ") + what + " (got " + v.dump() + ")");
  return as_text(v);
}

// Bounds print in their own type: [1, 1048576] for integers, [0.0001, 60] for numbers.
template <class T>
void check_range(const std::string& key, double x, T lo, T hi, const std::string& s) {
  if (x < static_cast<double>(lo) || x > static_cast<double>(hi)) {
    std::ostringstream os;
    os << "must be in [" << lo << ", " << hi << "] (got " << s << ")";
    bad(key, os.str());
  }
}

}  // namespace

const nlohmann::json* ConfigFields::given(const std::string& key) {
  known_.insert(key);
  if (!cfg_.contains(key) || cfg_.at(key).is_null()) return nullptr;
  return &cfg_.at(key);
}

ConfigFields::ConfigFields(const nlohmann::json& cfg) : cfg_(cfg) {
  if (!cfg_.is_object()) throw BadInput("config: expected a JSON object at the top level");
}

std::string ConfigFields::str(const std::string& key, const std::string& def) {
  const nlohmann::json* given_v = given(key);
  if (!given_v) return def;
  const auto& v = *given_v;
  if (!v.is_string()) bad(key, "expected a string (got " + v.dump() + ")");
  return utf8_string(key, v);
}

std::string ConfigFields::choice(const std::string& key, const std::string& def,
                                 const std::vector<std::string>& allowed) {
  const std::string v = str(key, def);
  for (const auto& a : allowed)
    if (v == a) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
  bad(key, "unknown value '" + v + "' (expected " + list + ")");
}

int64_t ConfigFields::integer(const std::string& key, int64_t def, int64_t lo, int64_t hi) {
  const nlohmann::json* v = given(key);
  if (!v) return def;
  const std::string s = number_text(key, *v, "an integer");
  const double x = strict_double(key, s);
  if (x != std::floor(x)) bad(key, "expected an integer (got '" + s + "')");
  check_range(key, x, lo, hi, s);
  return static_cast<int64_t>(x);
}

double ConfigFields::number(const std::string& key, double def, double lo, double hi) {
  const nlohmann::json* v = given(key);
  if (!v) return def;
  const std::string s = number_text(key, *v, "a number");
  const double x = strict_double(key, s);
  check_range(key, x, lo, hi, s);
  return x;
}

namespace {

// Seconds per unit; the longest suffix first, so "ms" is not read as "s".
struct TimeUnit {
  const char* suffix;
  double seconds;
};
constexpr TimeUnit kTimeUnits[] = {{"min", 60},       {"ms", 1e-3}, {"us", 1e-6},
                                   {"\u00b5s", 1e-6}, {"ns", 1e-9}, {"s", 1}};

double unit_seconds(const std::string& unit) {
  for (const TimeUnit& u : kTimeUnits)
    if (unit == u.suffix) return u.seconds;
  throw std::logic_error("duration: unknown unit '" + unit + "'");
}

}  // namespace

double ConfigFields::duration(const std::string& key, double def, const std::string& unit,
                              double lo, double hi) {
  const nlohmann::json* v = given(key);
  if (!v) return def;
  const std::string s = number_text(key, *v, "a time");
  const double scale = unit_seconds(unit);
  double x = 0;
  bool read = false;
  for (const TimeUnit& u : kTimeUnits) {
    const std::string suf = u.suffix;
    if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
      const std::string num = s.substr(0, s.size() - suf.size());
      char* end = nullptr;
      x = std::strtod(num.c_str(), &end);
      if (end != num.c_str() + num.size() || !std::isfinite(x))
        bad(key, "expected a time like 10s, 2ms or 50us (got '" + s + "')");
      x *= u.seconds / scale;
      read = true;
      break;
    }
  }
  if (!read) x = strict_double(key, s);  // a bare number: the flag's own unit
  check_range(key, x, lo, hi, s);
  return x;
}

bool ConfigFields::boolean(const std::string& key, bool def) {
  const nlohmann::json* given_v = given(key);
  if (!given_v) return def;
  const auto& v = *given_v;
  if (v.is_boolean()) return v.get<bool>();
  // One boolean style (true | false); the others users bring are aliases.
  const std::string s = as_text(v);
  if (s == "true" || s == "1" || s == "on" || s == "yes") return true;
  if (s == "false" || s == "0" || s == "off" || s == "no") return false;
  bad(key, "expected true or false (on | off, yes | no, 1 | 0 also do; got '" + s + "')");
}

double ConfigFields::bytes(const std::string& key, double def) {
  const nlohmann::json* given_v = given(key);
  if (!given_v) return def;
  const auto& v = *given_v;
  if (v.is_number()) return parse_bytes(v.dump(), field_name(key));
  if (!v.is_string()) bad(key, "expected a size like 8G (got " + v.dump() + ")");
  return parse_bytes(v.get<std::string>(), field_name(key));
}

std::vector<std::string> ConfigFields::strings(const std::string& key) {
  std::vector<std::string> out;
  const nlohmann::json* given_v = given(key);
  if (!given_v) return out;
  const auto& v = *given_v;
  if (v.is_string()) return {utf8_string(key, v)};
  if (!v.is_array()) bad(key, "expected a string or a list of strings (got " + v.dump() + ")");
  for (const auto& e : v) {
    if (!e.is_string()) bad(key, "expected strings in the list (got " + e.dump() + ")");
    out.push_back(utf8_string(key, e));
  }
  return out;
}

void ConfigFields::reject_unknown() const {
  const std::vector<std::string> keys(known_.begin(), known_.end());
  for (auto it = cfg_.begin(); it != cfg_.end(); ++it)
    if (!known_.count(it.key())) {
      const std::string near = nearest_name(it.key(), keys);
      throw BadInput("unknown config key '" + it.key() + "'" +
                     (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                     " (from --set or --config; the keys are listed in configs/README.md)");
    }
}

namespace {

// Suffixes, case-insensitive: K M G T and KiB MiB GiB TiB are binary (2^10 ...), as `free -g`
// and Slurm's --mem read them; KB MB GB TB are SI (10^3 ...), as disk and DIMM vendors write.
struct ByteUnit {
  const char* suffix;
  double mult;
};
constexpr ByteUnit kByteUnits[] = {
    {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30}, {"tib", 0x1p40}, {"kb", 1e3},
    {"mb", 1e6},     {"gb", 1e9},     {"tb", 1e12},    {"k", 0x1p10},   {"m", 0x1p20},
    {"g", 0x1p30},   {"t", 0x1p40},   {"b", 1}};

bool ends_with_nocase(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0; i < suffix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i])
      return false;
  return true;
}

}  // namespace

double parse_bytes(const std::string& text, const std::string& field) {
  if (text.empty()) throw BadInput(field + ": empty size");
  double mult = 0x1p30;  // a bare number is GiB
  std::string num = text;
  for (const ByteUnit& u : kByteUnits)
    if (ends_with_nocase(text, u.suffix)) {
      num = text.substr(0, text.size() - std::string(u.suffix).size());
      mult = u.mult;
      break;
    }
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || errno == ERANGE || !std::isfinite(x) ||
      x < 0 || x * mult > 1e18)
    throw BadInput(field +
                   ": expected a size like 2GiB, 2GB, 2G, 512MiB or 512M, or a number of GiB "
                   "(got '" +
                   text + "')");
  return x * mult;
}

}  // namespace tpb
