// Config files by name or path, with the "known: ..." hint built from the folder's contents.
#include "base/config_loader.h"

#include <algorithm>
#include <filesystem>

#include "base/errors.h"
#include "base/read_text.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

[[noreturn]] void unknown(const ConfigKind& kind, const std::string& name,
                          const std::string& config_dir) {
  throw BadInput(kind.option + ": unknown " + kind.noun + " '" + name +
                 "' (known: " + join(config_names(kind, config_dir)) + ")");
}

fs::path find_file(const ConfigKind& kind, const std::string& name_or_path,
                   const std::string& config_dir) {
  if (ends_with(name_or_path, ".json")) {
    if (fs::is_regular_file(name_or_path)) return name_or_path;
    if (kind.missing_path_is_unknown) unknown(kind, name_or_path, config_dir);
    throw BadInput(kind.option + ": file '" + name_or_path + "' not found");
  }
  const fs::path path = fs::path(config_dir) / kind.folder / (name_or_path + ".json");
  if (name_or_path.empty() || name_or_path.find('/') != std::string::npos ||
      !fs::is_regular_file(path))
    unknown(kind, name_or_path, config_dir);
  return path;
}

}  // namespace

std::string optional_string(const nlohmann::json& j, const char* key, const std::string& absent,
                            const std::string& prefix) {
  if (!j.is_object() || !j.contains(key)) return absent;
  if (!j[key].is_string()) throw BadInput(prefix + key + " must be a string");
  return j[key].get<std::string>();
}

nlohmann::json read_json_file(const std::string& path, const std::string& option) {
  const std::string text = read_text_file(path, option);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw BadInput(option + ": '" + path + "' is malformed JSON: " + json_error_text(e));
  }
}

std::vector<std::string> config_names(const ConfigKind& kind, const std::string& config_dir) {
  std::vector<std::string> names = kind.builtin;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(config_dir) / kind.folder, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

ConfigFile load_config(const ConfigKind& kind, const std::string& name_or_path,
                       const std::string& config_dir) {
  const fs::path path = find_file(kind, name_or_path, config_dir);
  ConfigFile f{path.string(), path.stem().string(), {}};
  if (kind.malformed_names_option) {
    f.json = read_json_file(f.path, kind.option);
    return f;
  }
  const std::string text = read_text_file(f.path, kind.option);
  try {
    f.json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw BadInput(f.path + ": malformed JSON: " + json_error_text(e));
  }
  return f;
}

}  // namespace tpb
