// `tpbench report RESULTS... [--out DIR] [--no-plots] [--trace merged]`: report.md (and plots,
// and with --trace merged one trace of every point's) from results.
// Reads files only; ranks other than 0 load and stay quiet, so it runs with or without mpirun.
// TPB_PLOT_SCRIPT and TPB_PLOT_PYTHON name another plot script or the python to run it with.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/errors.h"
#include "base/read_text.h"
#include "harness/config/config_dir.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_doc_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/results_reader.h"
#include "harness/report/plots.h"
#include "harness/report/report_md.h"
#include "harness/report/trace/merged_trace.h"
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

// --trace merged: the trace of every point that has one, read from beside its results.json.
std::vector<PointTrace> point_traces(const std::vector<ReportInput>& runs,
                                     const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<PointTrace> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const fs::path dir = fs::path(results_file_of(paths[i])).parent_path();
    for (std::size_t k = 0; k < runs[i].doc.points.size(); ++k) {
      const ResultsPoint& p = runs[i].doc.points[k];
      if (!p.model || !p.model->trace) continue;
      const std::string file = (dir / *p.model->trace).string();
      nlohmann::ordered_json t;
      try {
        t = nlohmann::ordered_json::parse(read_text_file(file, "--trace"));
      } catch (const nlohmann::json::parse_error& e) {
        throw BadInput("--trace: '" + file + "' is malformed JSON: " + json_error_text(e));
      }
      out.push_back({i, k, file, std::move(t)});
    }
  }
  if (out.empty())
    throw BadInput(
        "--trace: no point of these results has a trace (run them with --trace-steps > 0)");
  return out;
}

std::vector<std::size_t> point_counts(const std::vector<ReportInput>& runs) {
  std::vector<std::size_t> n;
  for (const auto& r : runs) n.push_back(r.doc.points.size());
  return n;
}

// The trace option: "" (none) or "merged".
std::string trace_option(const nlohmann::json& config) {
  if (!config.contains("trace")) return "";
  const std::string t = config["trace"].is_string() ? config["trace"].get<std::string>() : "?";
  if (t != "merged") throw BadInput("--trace: unknown value '" + t + "' (merged)");
  return t;
}

}  // namespace

int verb_report(const CliResult& cli, const World& w) {
  std::vector<ReportInput> runs;
  std::vector<PointTrace> traces;
  std::string out;
  // Every rank loads and checks, so a bad path is one agreed error however it was launched.
  agree(w.comm, [&] {
    for (auto it = cli.config.begin(); it != cli.config.end(); ++it)
      if (it.key() != "out" && it.key() != "no_plots" && it.key() != "trace")
        throw BadInput("report: option '" + it.key() + "' does not apply");
    if (cli.positional.empty())
      throw BadInput("report: give one or more RESULTS directories or files");
    for (const auto& path : cli.positional)
      runs.push_back({path, load_results_doc(path, "report")});
    if (trace_option(cli.config) == "merged") traces = point_traces(runs, cli.positional);
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
  if (!traces.empty()) {
    const auto merged = merged_trace(traces, point_counts(runs));
    write_file_atomic(out + "/trace-merged.json", merged.dump() + "\n");
    std::cout << "report: " << out << "/trace-merged.json (" << traces.size() << " point traces, "
              << trace_events(merged) << " events)\n";
  }
  return 0;
}

}  // namespace tpb
