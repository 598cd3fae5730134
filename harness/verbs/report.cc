// `tpbench report RESULTS... [--out DIR] [--no-plots]`: report.md (and plots) from results.
// Reads files only; ranks other than 0 load and stay quiet, so it runs with or without mpirun.
// TPB_PLOT_SCRIPT and TPB_PLOT_PYTHON name another plot script or the python to run it with.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "base/errors.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/results_reader.h"
#include "harness/report/plots.h"
#include "harness/report/report_md.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

std::string plot_script() {
  if (const char* s = std::getenv("TPB_PLOT_SCRIPT")) return s;
  return TPB_SOURCE_DIR "/results/plot.py";
}

// The python to run it with; empty: the first that imports what it needs.
std::string plot_python() {
  const char* s = std::getenv("TPB_PLOT_PYTHON");
  return s ? s : "";
}

// The first input's directory: where its results.json lives.
std::string default_out(const std::string& first) {
  namespace fs = std::filesystem;
  if (fs::is_directory(first)) return first;
  const fs::path parent = fs::path(first).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

int verb_report(const CliResult& cli, const World& w) {
  std::vector<ReportInput> runs;
  std::string out;
  // Every rank loads and checks, so a bad path is one agreed error however it was launched.
  agree(w.comm, [&] {
    for (auto it = cli.config.begin(); it != cli.config.end(); ++it)
      if (it.key() != "out" && it.key() != "no_plots")
        throw BadInput("report: option '" + it.key() + "' does not apply");
    if (cli.positional.empty())
      throw BadInput("report: give one or more RESULTS directories or files");
    for (const auto& path : cli.positional) runs.push_back({path, load_results(path, "report")});
    out = cli.config.contains("out") && cli.config["out"].is_string()
              ? cli.config["out"].get<std::string>()
              : default_out(cli.positional.front());
    if (w.rank == 0) ensure_writable_dir(out);
  });
  if (w.rank != 0) return 0;
  const PlotOutcome plots = cli.config.value("no_plots", false)
                                ? PlotOutcome{{}, "No plots: --no-plots was given."}
                                : make_plots(cli.positional, out, plot_script(), plot_python());
  write_file_atomic(out + "/report.md", report_markdown(runs, plots));
  std::cout << "report: " << out << "/report.md (" << runs.size() << " results, " << plots.drawn()
            << " plots)\n"
            << plots.note << "\n";
  return 0;
}

}  // namespace tpb
