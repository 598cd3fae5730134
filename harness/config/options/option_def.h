// One option, declared once: its config key (the flag is --key with '_' -> '-'), its type, its
// default and its help. The catalogues beside this file list every verb's options in these
// records; the CLI registers and documents them from there (harness/config/cli.cc), the specs
// read them through ConfigFields' OptionDef getters (bounds and default from here), and the
// results echo and rerun keys are written with the same keys. No MPI, no CLI11, no JSON.
#pragma once
#include <string>

namespace tpb {

enum class OptType {
  integer,  // a whole number in [lo, hi]
  number,   // a real number in [lo, hi]
  time,     // a time with a unit (10s, 2ms, 50us); a bare number is in `unit`
  size,     // bytes with a unit (8G, 512MiB, 4K); see config_fields.h parse_bytes
  text,     // free text: a name, a file, a folder, a spec with its own grammar
  choice,   // one of `choices`
  boolean,  // true | false (on | off, yes | no, 1 | 0 also do)
  list,     // text, or a list of texts (repeatable on the command line)
};

struct OptionDef {
  const char* key;
  OptType type;
  // The default as the getters parse it and as --help shows it. Where the default depends on
  // the run (the backend's dtype, the world size), `def` is empty, `def_note` says what it is,
  // and the spec passes the value to the getter. A note, when given, is what --help shows
  // (the topology "default" is the run's own fabric).
  const char* def;
  const char* help;
  double lo = 0, hi = 0;     // integer, number, time (in `unit`)
  const char* unit = "";     // time: the unit of a bare number (s, ms, us)
  const char* choices = "";  // choice: "a|b|c"
  const char* def_note = "";
  const char* type_name = "";  // overrides the type's own name in --help ("N|auto", "SEED:CV")
  const char* flags = "";      // nccl-tests' and other extra spellings: "-b,--minbytes"
};

// The option `o` as another verb takes it: the same key, type, bounds and value, with that
// verb's default, help and default note (the results verbs' --topology, every verb's --out).
constexpr OptionDef variant_of(const OptionDef& o, const char* def, const char* help,
                               const char* def_note = "") {
  OptionDef v = o;
  v.def = def;
  v.help = help;
  v.def_note = def_note;
  return v;
}

// "INT", "TIME", "decode|prefill", ... as --help shows the value.
std::string option_type_name(const OptionDef& o);

// "(default 1)", "(default 600s)", "(default: the backend's)", or "" without one.
std::string option_default_text(const OptionDef& o);

}  // namespace tpb
