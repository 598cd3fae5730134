// Plots for `tpbench report`: results/plot.py (matplotlib and pandas) run as a child process.
// Plotting is formatting only, so a machine without them still gets report.md, with a line
// saying what is missing.
#pragma once
#include <string>
#include <vector>

namespace tpb {

// One plot as plot.py's index (plots/index.json) lists it.
struct PlotEntry {
  std::string name, title, what;   // what: one line saying what the plot shows
  std::vector<std::string> files;  // relative to out_dir: "plots/x.png", ".svg", ".json" (its data)
  std::string missing;             // why it was not drawn (no data for these results), or ""
};

struct PlotOutcome {
  std::vector<PlotEntry> plots;
  std::string note;  // how they were made, or why there are none
  std::size_t drawn() const;
};

// Runs args[0] (PATH lookup) with args and returns its exit status, or -1 if it could not start
// or was killed. quiet: its stdout and stderr go to /dev/null.
int run_child(const std::vector<std::string>& args, bool quiet);

// Runs `script` over `inputs` (results directories or files) into out_dir/plots with `python`,
// or when it is empty with the first of python3 and /usr/bin/python3 that imports matplotlib
// and pandas (Debian's python3-matplotlib serves /usr/bin/python3, which need not be the
// python3 first on PATH).
PlotOutcome make_plots(const std::vector<std::string>& inputs, const std::string& out_dir,
                       const std::string& script, const std::string& python);

}  // namespace tpb
