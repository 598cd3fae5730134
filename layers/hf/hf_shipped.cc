// Shipped Hugging Face configs by name: the folder layout is the hub's ORG/NAME, so a hub id
// maps to a file without a table to keep in step with the folder.
#include "layers/hf/hf_shipped.h"

#include <algorithm>
#include <filesystem>

#include "base/errors.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;

fs::path hf_dir(const std::string& config_dir) {
  return fs::path(config_dir) / "models" / "hf";
}

}  // namespace

std::vector<ShippedHf> shipped_hf(const std::string& config_dir) {
  std::vector<ShippedHf> out;
  std::error_code ec;
  for (const auto& org : fs::directory_iterator(hf_dir(config_dir), ec)) {
    if (!org.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(org.path(), ec))
      if (f.path().extension() == ".json")
        out.push_back(
            {org.path().filename().string() + "/" + f.path().stem().string(), f.path().string()});
  }
  std::sort(out.begin(), out.end(),
            [](const ShippedHf& a, const ShippedHf& b) { return a.id < b.id; });
  return out;
}

ShippedHf find_shipped_hf(const std::string& name, const std::string& config_dir) {
  if (name.empty() || name.find("..") != std::string::npos) return {};
  const auto slash = name.find('/');
  if (slash != std::string::npos) {
    // ORG/NAME exactly: one slash, both parts named (a path such as a/b/c is no hub id).
    if (slash == 0 || slash + 1 == name.size() || name.find('/', slash + 1) != std::string::npos)
      return {};
    const fs::path p = hf_dir(config_dir) / (name + ".json");
    return fs::is_regular_file(p) ? ShippedHf{name, p.string()} : ShippedHf{};
  }
  std::vector<ShippedHf> hits;
  for (ShippedHf& s : shipped_hf(config_dir))
    if (s.id.substr(s.id.find('/') + 1) == name) hits.push_back(std::move(s));
  if (hits.size() > 1) {
    std::string ids;
    for (const ShippedHf& s : hits) ids += (ids.empty() ? "" : ", ") + s.id;
    throw BadInput("--model: '" + name + "' is shipped by several organisations (" + ids +
                   "): name one");
  }
  return hits.empty() ? ShippedHf{} : hits.front();
}

}  // namespace tpb
