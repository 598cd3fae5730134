// `tpbench diagnose RESULTS...`: verdicts in the article's order for every point of each file.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "harness/diagnose.h"
#include "harness/errors.h"
#include "harness/read_text.h"
#include "harness/verbs.h"

namespace tpb {

int verb_diagnose(const CliResult& cli, const World& w) {
  if (w.rank != 0) return 0;
  if (cli.positional.empty())
    throw BadInput("diagnose: give one or more RESULTS directories or files");
  for (const auto& path : cli.positional) {
    std::string file = path;
    if (std::filesystem::is_directory(path)) file = path + "/results.json";
    const std::string text = read_text_file(file, "diagnose");
    nlohmann::ordered_json r;
    try {
      r = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      throw BadInput("diagnose: '" + file + "' is malformed JSON: " + e.what());
    }
    if (!r.contains("points")) throw BadInput("diagnose: '" + file + "' has no points");
    std::cout << "== " << file << "\n";
    for (const auto& p : r["points"]) {
      const auto& par = p["params"];
      std::cout << "point " << par.value("phase", "?") << " batch=" << par.value("batch", 0)
                << " tp=" << par.value("tp", 0) << " status=" << p.value("status", "?") << "\n"
                << format_verdicts(diagnose_point(p));
    }
    const auto sweep = diagnose_sweep(r["points"]);
    if (!sweep.empty()) std::cout << "across points\n" << format_verdicts(sweep);
  }
  return 0;
}

}  // namespace tpb
