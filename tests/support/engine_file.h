// An engine profile (layers/profile/engine.h) written where --engine can name it by path, for
// the model-engine tests. The name carries the process id: ctest runs each test in its own
// process, in parallel, and tests that share a stem would otherwise read each other's half-written
// file.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

inline std::string write_engine(const std::string& stem, const nlohmann::json& j) {
  const auto path =
      std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << j.dump();
  return path.string();
}

}  // namespace tpb
