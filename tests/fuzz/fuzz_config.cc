// libFuzzer target: the config path every run takes, text -> flat config -> RunSpec. Any
// tpb::BadInput is the expected answer to bad input; any other exception, crash or sanitizer
// report is a finding. No MPI: resolve_run_spec and parse_cli never call it.
//
// Input layout: byte 0 picks the world size (1 + (b & 7)) and the front end (bit 0x20):
//   set   (e.g. '0'..'9', 'a'..'z'): the rest is a --config file's JSON text;
//   clear (e.g. 'A'..'Z'):           the rest is a command line, one argument per line, after
//                                    "tpbench run" (so --set, --inject and --config are reached).
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/errors.h"
#include "harness/config/cli.h"
#include "harness/config/run_spec.h"

namespace {

// Returns false when the command line itself was refused (or asked for help).
bool config_from_cli(const std::string& text, nlohmann::json& cfg) {
  std::vector<std::string> args = {"tpbench", "run"};
  std::size_t start = 0;
  for (std::size_t at; (at = text.find('\n', start)) != std::string::npos; start = at + 1)
    args.push_back(text.substr(start, at - start));
  args.push_back(text.substr(start));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // --help (or -h inside a group of short flags) prints the usage: drop it, it is not a finding.
  std::streambuf* const cout_buf = std::cout.rdbuf(nullptr);
  try {
    tpb::CliResult r = tpb::parse_cli(static_cast<int>(args.size()), argv.data());
    std::cout.rdbuf(cout_buf);
    cfg = std::move(r.config);
    return !r.help;
  } catch (const tpb::BadInput&) {
    std::cout.rdbuf(cout_buf);
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int world = 1 + (data[0] & 7);
  const bool json_front_end = (data[0] & 0x20) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);

  nlohmann::json cfg;
  if (json_front_end) {
    cfg = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (cfg.is_discarded()) return 0;  // merge_config_file refuses it with a BadInput
  } else if (!config_from_cli(text, cfg)) {
    return 0;
  }
  try {
    const tpb::RunSpec s = tpb::resolve_run_spec(cfg, world, TPB_CONFIG_DIR);
    // What happens next to an accepted spec: echoed into results.json and priced.
    const std::string echoed = tpb::run_spec_to_json(s).dump();
    const tpb::MemoryNeed need = tpb::memory_need(s.cost_query());
    if (echoed.empty() || !(need.total() >= 0)) __builtin_trap();
  } catch (const tpb::BadInput&) {
  }
  return 0;
}
