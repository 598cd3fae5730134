// `tpbench compare A B ...`: side-by-side table of runs or sweeps (harness/report/compare/compare.h
// says how points are matched). Reads files only; ranks other than 0 load and stay quiet, so
// a bad path is one agreed error however the command was launched.
#include <iostream>

#include "harness/mpi/agreement.h"
#include "harness/record/json/compare_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/report/compare/compare.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_compare(const CliResult& cli, const World& w) {
  CompareRecord cmp;
  std::string out;
  agree(w.comm, [&] {
    for (auto it = cli.config.begin(); it != cli.config.end(); ++it)
      if (it.key() != "out") throw BadInput("compare: option '" + it.key() + "' does not apply");
    out = cli.config.contains("out") ? cli.config["out"].get<std::string>() : "";
    std::vector<CompareInput> runs;
    for (const auto& p : cli.positional) runs.push_back(load_compare_input(p));
    cmp = compare_runs(runs);
    if (w.rank == 0 && !out.empty()) ensure_writable_dir(out);
  });
  if (w.rank != 0) return 0;
  if (!out.empty()) write_file_atomic(out + "/compare.json", to_json(cmp).dump(2) + "\n");
  std::cout << format_compare(cmp) << std::flush;
  if (!out.empty()) std::cout << "compare: " << out << "/compare.json\n" << std::flush;
  return 0;
}

}  // namespace tpb
