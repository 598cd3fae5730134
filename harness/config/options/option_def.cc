// How --help shows an option's value and default.
#include "harness/config/options/option_def.h"

namespace tpb {

std::string option_type_name(const OptionDef& o) {
  if (*o.type_name) return o.type_name;
  switch (o.type) {
    case OptType::integer:
      return "INT";
    case OptType::number:
      return "NUM";
    case OptType::time:
      return "TIME";
    case OptType::size:
      return "SIZE";
    case OptType::choice:
      return o.choices;
    case OptType::boolean:
      return "true|false";
    case OptType::list:
      return "LIST";
    case OptType::text:
      break;
  }
  return "TEXT";
}

std::string option_default_text(const OptionDef& o) {
  // A time's default carries its unit, so "600" never reads as milliseconds.
  if (*o.def_note) return std::string("(default: ") + o.def_note + ")";
  if (*o.def)
    return std::string("(default ") + o.def + (o.type == OptType::time ? o.unit : "") + ")";
  return "";
}

}  // namespace tpb
