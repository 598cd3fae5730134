// The device check's sections, each inside its own catch: a throw (cuDNN refusing a graph, a
// CUDA error) is that section's FAIL with its message, and the sections after it still run.
// Host only, so tests/unit runs a throwing section through this same runner.
#pragma once
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tpb {

class CheckSections {
 public:
  explicit CheckSections(std::FILE* out) : out_(out) {}

  // Runs `body`, which returns its number of failures, and adds them to the total. A throw is
  // one failure: printed as "  FAIL: <name>: <what>", kept for the verdict, and the caller
  // goes on with its next section. Returns this section's failures.
  int run(const std::string& name, const std::function<int()>& body) {
    int n = 0;
    try {
      n = body();
    } catch (const std::exception& e) {
      n = stopped(name, e.what());
    } catch (...) {
      n = stopped(name, "an exception that is not a std::exception");
    }
    failures_ += n;
    return n;
  }

  int failures() const { return failures_; }
  // "<name>: <what>" of each section that threw, in order.
  const std::vector<std::string>& thrown() const { return thrown_; }

  // The last line device-check.sh reads: "device-check: PASS (0 failures)", or FAIL with the
  // count and how many sections a throw cut short.
  std::string verdict() const {
    char line[160];
    std::snprintf(line, sizeof line, "device-check: %s (%d failure%s", failures_ ? "FAIL" : "PASS",
                  failures_, failures_ == 1 ? "" : "s");
    std::string v = line;
    if (!thrown_.empty())
      v += "; " + std::to_string(thrown_.size()) + " section" + (thrown_.size() == 1 ? "" : "s") +
           " stopped by an exception";
    return v + ")";
  }

 private:
  int stopped(const std::string& name, const std::string& what) {
    std::fprintf(out_, "  FAIL: %s: %s\n", name.c_str(), what.c_str());
    std::fflush(out_);  // before the next section can crash the process
    thrown_.push_back(name + ": " + what);
    return 1;
  }

  std::FILE* out_;
  int failures_ = 0;
  std::vector<std::string> thrown_;
};

}  // namespace tpb
