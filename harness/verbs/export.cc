// `tpbench export [--format openmetrics|csv] RESULTS...`: the points' and ranks' metrics for
// dashboards (Prometheus text format, for node_exporter's textfile collector or a push gateway)
// or spreadsheets, on stdout. Reads files only, like report; ranks other than 0 stay quiet.
#include <iostream>

#include "base/errors.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_doc_json.h"
#include "harness/report/export/export_csv.h"
#include "harness/report/export/export_table.h"
#include "harness/report/export/openmetrics.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_export(const CliResult& cli, const World& w) {
  std::vector<ExportPoint> points;
  std::string format;
  // Every rank loads and checks, so a bad path or format is one agreed error.
  agree(w.comm, [&] {
    for (auto it = cli.config.begin(); it != cli.config.end(); ++it)
      if (it.key() != "format") throw BadInput("export: option '" + it.key() + "' does not apply");
    format = cli.config.value("format", std::string("openmetrics"));
    if (format != "openmetrics" && format != "csv")
      throw BadInput("--format: unknown format '" + format + "' (openmetrics, csv)");
    if (cli.positional.empty())
      throw BadInput("export: give one or more RESULTS directories or files");
    for (const auto& path : cli.positional) {
      const ResultsDoc doc = load_results_doc(path, "export");
      for (auto& p : export_points(path, doc)) points.push_back(std::move(p));
    }
  });
  if (w.rank != 0) return 0;
  std::cout << (format == "csv" ? csv_text(points) : openmetrics_text(points)) << std::flush;
  return 0;
}

}  // namespace tpb
