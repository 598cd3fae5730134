#include "harness/report/plots.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>

extern char** environ;

namespace tpb {

namespace {

// Runs argv[0] (PATH lookup) and returns its exit status, or -1 if it could not start or was
// killed. quiet: its stdout and stderr go to /dev/null.
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

}  // namespace

PlotOutcome make_plots(const std::vector<std::string>& inputs, const std::string& out_dir,
                       const std::string& script) {
  namespace fs = std::filesystem;
  PlotOutcome o;
  if (!fs::is_regular_file(script)) {
    o.note = "No plots: the plot script '" + script + "' was not found (set TPB_PLOT_SCRIPT).";
    return o;
  }
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    if (run_child({py, "-c", "import matplotlib"}, true) != 0) continue;
    std::vector<std::string> args{py, script};
    args.insert(args.end(), inputs.begin(), inputs.end());
    args.insert(args.end(), {"--out", out_dir + "/plots"});
    const int rc = run_child(args, false);
    if (rc != 0) {
      o.note = "No plots: " + script + " exited with " + std::to_string(rc) + ".";
      return o;
    }
    for (const char* f : {"utilisation.png", "throughput.png", "ranks.png"})
      if (fs::exists(fs::path(out_dir) / "plots" / f)) o.files.push_back(std::string("plots/") + f);
    o.note = "Made by " + script + " with " + py + " (formatting only: it reads the same files).";
    return o;
  }
  o.note =
      "No plots: no python3 here imports matplotlib (Debian: apt-get install "
      "python3-matplotlib).";
  return o;
}

}  // namespace tpb
