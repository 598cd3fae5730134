// `tpbench whatif DIR [--json]`: what fixing each cause would buy on a measured run or sweep,
// replayed from the point traces (record/whatif_builder.h). Writes the results' whatif
// section, then prints the ranked table, or with --json the section itself.
#include <filesystem>
#include <iostream>

#include "base/errors.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/results_reader.h"
#include "harness/record/whatif/whatif_builder.h"
#include "harness/record/whatif/whatif_json.h"
#include "harness/report/whatif_table.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_whatif(const CliResult& cli, const World& w) {
  nlohmann::ordered_json doc;
  WhatifRecord rec;
  std::string file;
  agree(w.comm, [&] {
    for (auto it = cli.config.begin(); it != cli.config.end(); ++it)
      if (it.key() != "json") throw BadInput("whatif: option '" + it.key() + "' does not apply");
    if (cli.positional.size() != 1) throw BadInput("whatif: give one RESULTS directory");
    doc = load_results(cli.positional[0], "whatif");
    file = results_file_of(cli.positional[0]);
    const std::string dir = std::filesystem::path(file).parent_path().string();
    rec = build_whatif(doc, dir.empty() ? "." : dir);
  });
  if (w.rank != 0) return 0;
  doc[whatif_section()] = to_json(rec);
  write_file_atomic(
      file, doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  if (cli.config.value("json", false)) {
    std::cout << to_json(rec).dump(2) << "\n";
    return 0;
  }
  std::cout << "what fixing it buys (" << file << ", replayed from the point traces)\n"
            << whatif_table_md(rec);
  return 0;
}

}  // namespace tpb
