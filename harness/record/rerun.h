// `tpbench run --from RESULTS --point K`: rebuilds the config of a recorded point, so any
// result can be rerun exactly (resolved config + that point's params), with options given
// on the command line taking precedence (e.g. a new --out).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

// Throws BadInput naming --from / --point when the file or the point does not exist.
nlohmann::json rerun_config(const std::string& results, long long point,
                            const nlohmann::json& cli_config);

}  // namespace tpb
