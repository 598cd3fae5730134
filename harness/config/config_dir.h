// Where configs/ (models, hardware, topologies, sweeps) is read from when a config does not
// say: $TPB_CONFIG_DIR, else configs/ beside the executable (a bundle carries it there), else
// ../configs from the executable's folder, else the source tree's configs/ compiled in.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tpb {

// The search, given its inputs (a test can hand it any): `env` is $TPB_CONFIG_DIR (empty as
// unset), `exe` the running executable's path ("" when unknown), `source_dir` the compiled-in
// source tree. A $TPB_CONFIG_DIR that is no folder is an error naming it, not a reason to read
// another tree quietly. Throws BadInput naming every place it looked when none is a folder.
std::string find_config_dir(const std::optional<std::string>& env, const std::string& exe,
                            const std::string& source_dir);

// find_config_dir for this process (/proc/self/exe).
std::string default_config_dir();

// The config's "config_dir" when it gives one, else default_config_dir(): the search (and its
// error) only when it is needed.
std::string config_dir_for(const nlohmann::json& config);

}  // namespace tpb
