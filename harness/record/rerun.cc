// Rerun config: recorded config < the point's params < explicit command-line options.
#include "harness/record/rerun.h"

#include <fstream>

#include "base/errors.h"
#include "harness/config/run_spec.h"
#include "harness/record/results_reader.h"

namespace tpb {

nlohmann::json rerun_config(const std::string& results, long long point,
                            const nlohmann::json& cli_config) {
  const std::string file = results_file_of(results);
  const nlohmann::json r = load_results(results, "--from");
  if (!r.contains("config"))
    throw BadInput("--from: '" + file + "' is not a tpbench results file (no config)");
  if (point < 0 || point >= static_cast<long long>(r["points"].size()))
    throw BadInput("--point: " + std::to_string(point) + " is out of range (the file has " +
                   std::to_string(r["points"].size()) + " points)");
  // Only the keys a run understands travel; derived blocks are re-resolved from the names,
  // and sweep axes are replaced by the point's values.
  const nlohmann::json& cfg = r["config"];
  const nlohmann::json& par = r["points"][point]["params"];
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& k : rerun_keys()) {
    if (par.contains(k) && !par[k].is_null()) {
      out[k] = par[k];
    } else if (cfg.contains(k) && !cfg[k].is_null() && !cfg[k].is_array()) {
      out[k] = cfg[k];
    } else if (cfg.contains(k) && k == "inject") {
      out[k] = cfg[k];
    }
  }
  // params record the phase-irrelevant size as 0; drop it so defaults apply.
  if (out.value("phase", "decode") == "decode")
    out.erase("prompt");
  else
    out.erase("context");
  if (out.contains("memory_budget") && out["memory_budget"].is_number() &&
      out["memory_budget"] == 0)
    out.erase("memory_budget");
  if (out.contains("model") && par.contains("model") && cfg.contains("model") &&
      cfg["model"].is_string())
    out["model"] = cfg["model"];  // the recorded name or path, not the shape's display name
  for (auto it = cli_config.begin(); it != cli_config.end(); ++it) out[it.key()] = it.value();
  return out;
}

}  // namespace tpb
