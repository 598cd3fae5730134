// The shipped-files search. /proc/self/exe rather than argv[0]: mpirun and PATH lookups hand
// argv[0] over as a bare name, and a symlink to the binary should find the binary's bundle.
#include "harness/config/config_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "base/errors.h"

namespace tpb {

namespace {

// The running executable's path; "" when /proc/self/exe cannot be read.
std::string own_exe() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

}  // namespace

std::vector<std::string> data_roots(const std::string& exe, const std::string& source_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> roots;
  if (!exe.empty()) {
    const fs::path bin = fs::path(exe).parent_path();
    roots.push_back(bin.string());
    roots.push_back((bin / TPB_DATA_FROM_BIN).lexically_normal().string());
    roots.push_back(bin.parent_path().string());
  }
  roots.push_back(source_dir);
  return roots;
}

std::vector<std::string> own_data_roots() {
  return data_roots(own_exe(), TPB_SOURCE_DIR);
}

std::optional<std::string> find_shipped(const std::string& relative,
                                        const std::vector<std::string>& roots) {
  std::error_code ec;
  for (const std::string& r : roots) {
    const std::filesystem::path p = std::filesystem::path(r) / relative;
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return std::nullopt;
}

std::string find_config_dir(const std::optional<std::string>& env, const std::string& exe,
                            const std::string& source_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (env && !env->empty()) {
    if (fs::is_directory(*env, ec)) return *env;
    throw BadInput("--config-dir: $TPB_CONFIG_DIR is '" + *env +
                   "', which is no folder; point it at a configs/ folder or unset it");
  }
  const std::vector<std::string> roots = data_roots(exe, source_dir);
  for (const std::string& r : roots)
    if (fs::is_directory(fs::path(r) / "configs", ec)) return (fs::path(r) / "configs").string();
  std::string looked = "$TPB_CONFIG_DIR (unset)";
  for (const std::string& r : roots) looked += ", " + (fs::path(r) / "configs").string();
  throw BadInput("--config-dir: no configs/ folder found (looked in " + looked +
                 "); set TPB_CONFIG_DIR or give --config-dir");
}

std::string default_config_dir() {
  const char* env = std::getenv("TPB_CONFIG_DIR");
  return find_config_dir(env ? std::optional<std::string>(env) : std::nullopt, own_exe(),
                         TPB_SOURCE_DIR);
}

std::string config_dir_for(const nlohmann::json& config) {
  if (config.is_object() && config.contains("config_dir") && config["config_dir"].is_string())
    return config["config_dir"].get<std::string>();
  return default_config_dir();
}

}  // namespace tpb
