// `tpbench diagnose RESULTS...`: verdicts in the article's order for every point of each file.
#include "harness/report/diagnose.h"

#include <iostream>

#include "harness/mpi/agreement.h"
#include "harness/record/results_reader.h"
#include "harness/verbs/verbs.h"
#include "layers/base/errors.h"

namespace tpb {

int verb_diagnose(const CliResult& cli, const World& w) {
  std::vector<nlohmann::ordered_json> docs;
  // Every rank loads, so a bad path is one agreed error however it was launched.
  agree(w.comm, [&] {
    if (cli.positional.empty())
      throw BadInput("diagnose: give one or more RESULTS directories or files");
    for (const auto& path : cli.positional) docs.push_back(load_results(path, "diagnose"));
  });
  if (w.rank != 0) return 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const std::string file = results_file_of(cli.positional[i]);
    const nlohmann::ordered_json& r = docs[i];
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
