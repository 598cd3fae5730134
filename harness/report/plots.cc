#include "harness/report/plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

extern char** environ;

namespace tpb {

namespace {

// What plot.py needs besides the standard library.
const char* const kModules[] = {"matplotlib", "pandas"};

// The modules `py` cannot import; all of them when it does not start.
std::vector<std::string> missing_modules(const std::string& py) {
  std::vector<std::string> out;
  for (const char* m : kModules)
    if (run_child({py, "-c", std::string("import ") + m}, true) != 0) out.push_back(m);
  return out;
}

std::string no_python_note(const std::vector<std::string>& missing) {
  std::string names, debs;
  for (const auto& m : missing) {
    names += (names.empty() ? "" : " and ") + m;
    debs += " python3-" + m;
  }
  return "No plots: no python3 here imports " + names + " (Debian: apt-get install" + debs + ").";
}

// plot.py's index: every plot it drew or found no data for, in its order.
std::vector<PlotEntry> read_index(const std::filesystem::path& dir) {
  std::ifstream in(dir / "index.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  std::vector<PlotEntry> out;
  if (j.is_discarded() || !j.contains("plots")) return out;
  for (const auto& p : j["plots"]) {
    if (!p.is_object()) continue;
    PlotEntry e{p.value("name", ""), p.value("title", ""), p.value("what", ""), {}, ""};
    if (p.contains("missing") && p["missing"].is_string()) e.missing = p["missing"];
    for (const auto& f : p.value("files", nlohmann::json::array()))
      if (f.is_string()) e.files.push_back("plots/" + f.get<std::string>());
    out.push_back(std::move(e));
  }
  return out;
}

PlotOutcome run_script(const std::string& py, const std::vector<std::string>& inputs,
                       const std::string& out_dir, const std::string& script) {
  PlotOutcome o;
  std::vector<std::string> args{py, script};
  args.insert(args.end(), inputs.begin(), inputs.end());
  args.insert(args.end(), {"--out", out_dir + "/plots"});
  const int rc = run_child(args, false);
  if (rc != 0) {
    o.note = "No plots: " + script + " exited with " + std::to_string(rc) + ".";
    return o;
  }
  o.plots = read_index(std::filesystem::path(out_dir) / "plots");
  o.note = "Made by " + script + " with " + py +
           " (formatting only: it reads the same files). Beside each picture, its .json holds "
           "exactly the numbers drawn.";
  return o;
}

}  // namespace

int run_child(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::size_t PlotOutcome::drawn() const {
  std::size_t n = 0;
  for (const auto& p : plots) n += p.missing.empty() && !p.files.empty();
  return n;
}

PlotOutcome make_plots(const std::vector<std::string>& inputs, const std::string& out_dir,
                       const std::string& script, const std::string& python) {
  if (!std::filesystem::is_regular_file(script))
    return {{}, "No plots: the plot script '" + script + "' was not found (set TPB_PLOT_SCRIPT)."};
  std::vector<std::string> candidates{"python3", "/usr/bin/python3"};
  if (!python.empty()) candidates = {python};
  std::vector<std::string> fewest;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto missing = missing_modules(candidates[i]);
    if (missing.empty()) return run_script(candidates[i], inputs, out_dir, script);
    if (i == 0 || missing.size() < fewest.size()) fewest = missing;
  }
  return {{}, no_python_note(fewest)};
}

}  // namespace tpb
