// `tpbench report RESULTS... [--out DIR] [--no-plots]`: report.md (and plots) from results.
// Reads files only; ranks other than 0 load and stay quiet, so it runs with or without mpirun.
// TPB_PLOT_SCRIPT and TPB_PLOT_PYTHON name another plot script or the python to run it with.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/errors.h"
#include "harness/config/config_dir.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/results_reader.h"
#include "harness/report/plots.h"
#include "harness/report/report_md.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// TPB_PLOT_SCRIPT, else results/plot.py where configs/ is searched for (config_dir.h: beside
// the binary, its install prefix's share/tpbench, the source tree); nullopt when none has it.
std::optional<std::string> plot_script() {
  if (const char* s = std::getenv("TPB_PLOT_SCRIPT")) return s;
  return find_shipped("results/plot.py", own_data_roots());
}

// The python to run it with; empty: the first that imports what it needs.
std::string plot_python() {
  const char* s = std::getenv("TPB_PLOT_PYTHON");
  return s ? s : "";
}

// The plots, or the note saying where plot.py was looked for.
PlotOutcome plots_for(const std::vector<std::string>& inputs, const std::string& out) {
  const std::optional<std::string> script = plot_script();
  if (script) return make_plots(inputs, out, *script, plot_python());
  std::string looked;
  for (const std::string& r : own_data_roots()) looked += (looked.empty() ? "" : ", ") + r;
  return {{}, "No plots: results/plot.py is in none of " + looked + " (set TPB_PLOT_SCRIPT)."};
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
                                : plots_for(cli.positional, out);
  write_file_atomic(out + "/report.md", report_markdown(runs, plots));
  std::cout << "report: " << out << "/report.md (" << runs.size() << " results, " << plots.drawn()
            << " plots)\n"
            << plots.note << "\n";
  return 0;
}

}  // namespace tpb
