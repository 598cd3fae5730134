// An engine profile (layers/profile/engine.h) written where --engine can name it by path, for
// the model-engine tests.
#pragma once
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

inline std::string write_engine(const std::string& stem, const nlohmann::json& j) {
  const auto path = std::filesystem::temp_directory_path() / (stem + ".json");
  std::ofstream(path) << j.dump();
  return path.string();
}

}  // namespace tpb
