// The config folder search. /proc/self/exe rather than argv[0]: mpirun and PATH lookups hand
// argv[0] over as a bare name, and a symlink to the binary should find the binary's bundle.
#include "harness/config/config_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "base/errors.h"

namespace tpb {

std::string find_config_dir(const std::optional<std::string>& env, const std::string& exe,
                            const std::string& source_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (env && !env->empty()) {
    if (fs::is_directory(*env, ec)) return *env;
    throw BadInput("--config-dir: $TPB_CONFIG_DIR is '" + *env +
                   "', which is no folder; point it at a configs/ folder or unset it");
  }
  std::vector<std::string> places;
  if (!exe.empty()) {
    const fs::path bin = fs::path(exe).parent_path();
    places.push_back((bin / "configs").string());
    places.push_back((bin.parent_path() / "configs").string());
  }
  places.push_back(source_dir + "/configs");
  for (const std::string& p : places)
    if (fs::is_directory(p, ec)) return p;
  std::string looked = "$TPB_CONFIG_DIR (unset)";
  for (const std::string& p : places) looked += ", " + p;
  throw BadInput("--config-dir: no configs/ folder found (looked in " + looked +
                 "); set TPB_CONFIG_DIR or give --config-dir");
}

std::string default_config_dir() {
  const char* env = std::getenv("TPB_CONFIG_DIR");
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return find_config_dir(env ? std::optional<std::string>(env) : std::nullopt,
                         ec ? std::string() : exe.string(), TPB_SOURCE_DIR);
}

std::string config_dir_for(const nlohmann::json& config) {
  if (config.is_object() && config.contains("config_dir") && config["config_dir"].is_string())
    return config["config_dir"].get<std::string>();
  return default_config_dir();
}

}  // namespace tpb
