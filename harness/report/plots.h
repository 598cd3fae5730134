// Plots for `tpbench report`: results/plot.py (matplotlib) run as a child process. Plotting is
// formatting only, so a machine without matplotlib still gets report.md, with a line saying
// why it has no plots.
#pragma once
#include <string>
#include <vector>

namespace tpb {

struct PlotOutcome {
  std::vector<std::string> files;  // written images, relative to out_dir ("plots/x.png")
  std::string note;                // how they were made, or why there are none
};

// Runs `script` over `inputs` (results directories or files) into out_dir/plots with the first
// of python3 and /usr/bin/python3 that imports matplotlib (Debian's python3-matplotlib serves
// /usr/bin/python3, which need not be the python3 first on PATH).
PlotOutcome make_plots(const std::vector<std::string>& inputs, const std::string& out_dir,
                       const std::string& script);

}  // namespace tpb
