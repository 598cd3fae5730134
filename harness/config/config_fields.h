// Typed, strict reads of one flat config object (JSON file + CLI + --set). Every error names
// the field as the user wrote it ("--batch"), so config files and CLI share one vocabulary.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/config/options/option_def.h"

namespace tpb {

class ConfigFields {
 public:
  explicit ConfigFields(const nlohmann::json& cfg);

  // Each getter marks the key as known; values may be JSON numbers/bools or strings holding
  // them (the CLI passes strings).
  std::string str(const std::string& key, const std::string& def);
  std::string choice(const std::string& key, const std::string& def,
                     const std::vector<std::string>& allowed);
  int64_t integer(const std::string& key, int64_t def, int64_t lo, int64_t hi);
  double number(const std::string& key, double def, double lo, double hi);
  bool boolean(const std::string& key, bool def);
  // A time, returned in `unit` ("s", "ms" or "us"), the flag's own: a bare number is in that
  // unit (as before units were accepted), "10s", "2ms", "50us" (or "50µs"), "500ns", "1.5min"
  // in theirs. lo and hi are in `unit` too.
  double duration(const std::string& key, double def, const std::string& unit, double lo,
                  double hi);
  // A size in bytes: a number of GiB, or a string with a unit (see parse_bytes).
  double bytes(const std::string& key, double def);
  std::vector<std::string> strings(const std::string& key);

  // The same reads by an option's declaration (options/): its key, bounds and default. The
  // overloads with `def` serve options whose default depends on the run (the backend's dtype,
  // the world size), declared with an empty OptionDef::def.
  int64_t integer(const OptionDef& o);
  int64_t integer(const OptionDef& o, int64_t def);
  double number(const OptionDef& o);
  double duration(const OptionDef& o);  // in o.unit
  double duration(const OptionDef& o, double def);
  double bytes(const OptionDef& o);  // no default: 0
  std::string str(const OptionDef& o);
  std::string str(const OptionDef& o, const std::string& def);
  std::string choice(const OptionDef& o);
  std::string choice(const OptionDef& o, const std::string& def);
  bool boolean(const OptionDef& o);
  std::vector<std::string> strings(const OptionDef& o) { return strings(o.key); }
  bool has(const std::string& key) const { return cfg_.contains(key); }
  const nlohmann::json& raw(const std::string& key) const { return cfg_.at(key); }
  void mark_known(const std::string& key) { known_.insert(key); }

  // Throws BadInput for the first key that no getter asked for.
  void reject_unknown() const;

 private:
  // Marks `key` as known; nullptr when the config does not give it (absent or null).
  const nlohmann::json* given(const std::string& key);
  const nlohmann::json& cfg_;
  std::set<std::string> known_;
};

// "--key" for messages.
std::string field_name(const std::string& key);

// Parses "2GiB", "2G" (both 2^31), "2GB" (2e9), "512MiB", "1.5" (GiB) into bytes; K/M/G/T and
// KiB..TiB are binary, KB..TB are SI. Throws BadInput naming `field`.
double parse_bytes(const std::string& text, const std::string& field);

}  // namespace tpb
