// Command line: `tpbench <verb> [options]`. Options, --config FILE and --set key=value are
// merged into one flat config object (file < options < --set); validation happens later,
// in one place (run_spec.cc), so files and flags get the same checks and messages.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

struct CliResult {
  std::string verb;
  nlohmann::json config = nlohmann::json::object();
  std::vector<std::string> positional;  // e.g. RESULTS dirs for compare/diagnose
  std::vector<std::string> argv;
  bool help = false;  // help or --version was asked for: print help_text (or the
                      // version line) once, on rank 0, and exit 0
  bool version = false;
  bool quiet = false;  // --quiet: no progress lines (they go to stderr)
  std::string help_text;
  std::string from;          // run --from RESULTS: rerun a recorded point ...
  long long from_point = 0;  // ... this one (index into points[])
  // calibrate --from-aiconfigurator SYSTEM ENGINE VERSION: empty unless given (3 words then).
  std::vector<std::string> from_aiconfigurator;
};

// Throws BadInput with one line for unknown options, malformed --set, a bad --config file.
CliResult parse_cli(int argc, char** argv);

// Merges a JSON config file into `config` (keys already present win). Throws BadInput.
void merge_config_file(const std::string& path, nlohmann::json& config);

}  // namespace tpb
