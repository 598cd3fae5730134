// Where tpbench finds the files it ships with (configs/, results/plot.py) when nothing says:
// one search, from the executable's own location (/proc/self/exe), so that a carried bundle, an
// installed prefix and a build tree all find theirs; then the source tree compiled in.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tpb {

// The folders searched, in order, for the running executable `exe` ("" when unknown):
//   1. its own folder: a bundle (launch/device-bundle.sh) carries configs/ and results/ there;
//   2. TPB_DATA_FROM_BIN from it (../share/tpbench): what `cmake --install` lays out;
//   3. its parent: a build folder inside a checkout that was copied or moved (the compiled-in
//      path is then gone, as on a device machine given a copy of the tree);
//   4. `source_dir`, the source tree compiled in.
std::vector<std::string> data_roots(const std::string& exe, const std::string& source_dir);

// data_roots() for this process: /proc/self/exe and the compiled-in source tree.
std::vector<std::string> own_data_roots();

// The first root holding `relative` (a folder or a file); nullopt when none does.
std::optional<std::string> find_shipped(const std::string& relative,
                                        const std::vector<std::string>& roots);

// The search for configs/, given its inputs (a test can hand it any): `env` is $TPB_CONFIG_DIR
// (empty as unset), then the data roots of `exe` and `source_dir`. A $TPB_CONFIG_DIR that is
// no folder is an error naming it, not a reason to read another tree quietly. Throws BadInput
// naming every place it looked when none is a folder.
std::string find_config_dir(const std::optional<std::string>& env, const std::string& exe,
                            const std::string& source_dir);

// find_config_dir for this process.
std::string default_config_dir();

// The config's "config_dir" when it gives one, else default_config_dir(): the search (and its
// error) only when it is needed.
std::string config_dir_for(const nlohmann::json& config);

}  // namespace tpb
