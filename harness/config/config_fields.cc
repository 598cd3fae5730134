// Strict conversions for config values.
#include "harness/config/config_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "base/did_you_mean.h"
#include "base/errors.h"
#include "base/units.h"

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

double ConfigFields::duration(const std::string& key, double def, const std::string& unit,
                              double lo, double hi) {
  const nlohmann::json* v = given(key);
  if (!v) return def;
  const std::string s = number_text(key, *v, "a time");
  const std::optional<double> x = parse_time(s, unit);
  if (!x) bad(key, "expected a time like 10s, 2ms or 50us (got '" + s + "')");
  check_range(key, *x, lo, hi, s);
  return *x;
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

// An option's declared default, as its getter needs it: a declaration without one is a
// programming error when the caller gives no default either.
const char* declared_default(const OptionDef& o) {
  if (!*o.def) throw std::logic_error(std::string("option ") + o.key + ": no declared default");
  return o.def;
}

std::vector<std::string> split_choices(const char* choices) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* c = choices; *c; ++c) {
    if (*c == '|') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += *c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

int64_t ConfigFields::integer(const OptionDef& o) {
  return integer(o, std::stoll(declared_default(o)));
}
int64_t ConfigFields::integer(const OptionDef& o, int64_t def) {
  return integer(o.key, def, static_cast<int64_t>(o.lo), static_cast<int64_t>(o.hi));
}
double ConfigFields::number(const OptionDef& o) {
  return number(o.key, std::stod(declared_default(o)), o.lo, o.hi);
}
double ConfigFields::duration(const OptionDef& o) {
  return duration(o, std::stod(declared_default(o)));
}
double ConfigFields::duration(const OptionDef& o, double def) {
  return duration(o.key, def, o.unit, o.lo, o.hi);
}
double ConfigFields::bytes(const OptionDef& o) {
  return bytes(o.key, *o.def ? parse_bytes(o.def, field_name(o.key)) : 0.0);
}
std::string ConfigFields::str(const OptionDef& o) {
  return str(o.key, o.def);
}
std::string ConfigFields::str(const OptionDef& o, const std::string& def) {
  return str(o.key, def);
}
std::string ConfigFields::choice(const OptionDef& o) {
  return choice(o, declared_default(o));
}
std::string ConfigFields::choice(const OptionDef& o, const std::string& def) {
  return choice(o.key, def, split_choices(o.choices));
}
bool ConfigFields::boolean(const OptionDef& o) {
  return boolean(o.key, std::string(declared_default(o)) == "true");
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
