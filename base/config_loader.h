// The one rule for finding a config file of any kind (models, hardware, topologies): a NAME is
// CONFIG_DIR/<folder>/NAME.json, anything ending in ".json" is a path the user gave.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

struct ConfigKind {
  std::string option;                // "--model": names the option in every message
  std::string folder;                // "models": under the config dir
  std::string noun;                  // "model": "unknown model 'x' (known: ...)"
  std::vector<std::string> builtin;  // names that need no file (listed as known)
  // How each kind has always reported a missing path and a file that is not JSON. Users' scripts
  // and the bad-input tests match these messages, so they are kept per kind.
  bool missing_path_is_unknown = false;  // "unknown <noun> '<path>'", not "file '<path>' not found"
  bool malformed_names_option = false;   // "<option>: '<path>' is malformed JSON: ..."
};

struct ConfigFile {
  std::string path;  // the file read
  std::string stem;  // its name without ".json": the default name of what it holds
  nlohmann::json json;
};

// The JSON in `path`. Throws BadInput("<option>: '<path>' is malformed JSON: ...") or read_text's
// BadInput naming `option`.
nlohmann::json read_json_file(const std::string& path, const std::string& option);

// j[key] where it is a string, `absent` where `j` has none. Any other kind throws
// BadInput(prefix + key + " must be a string"): nlohmann's own type_error names no field.
std::string optional_string(const nlohmann::json& j, const char* key, const std::string& absent,
                            const std::string& prefix);

// Sorted names known for `kind`: the built-in ones and the stems of CONFIG_DIR/<folder>/*.json.
std::vector<std::string> config_names(const ConfigKind& kind, const std::string& config_dir);

// Finds, reads and parses the file. A name with a '/' would escape the folder, so it is
// unknown. Throws BadInput naming kind.option.
ConfigFile load_config(const ConfigKind& kind, const std::string& name_or_path,
                       const std::string& config_dir);

// load_config, then `parse(json, path)`; a result without a name takes the file's stem.
template <class T, class Parse>
T load_named_config(const ConfigKind& kind, const std::string& name_or_path,
                    const std::string& config_dir, Parse parse) {
  const ConfigFile f = load_config(kind, name_or_path, config_dir);
  T v = parse(f.json, f.path);
  if (v.name.empty()) v.name = f.stem;
  return v;
}

}  // namespace tpb
