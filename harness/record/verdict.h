// One finding of `tpbench diagnose` (report/diagnose.h makes them; results_json.h writes them).
#pragma once
#include <cstdint>
#include <string>

namespace tpb {

struct Verdict {
  int64_t order = 0;  // the article's step: 1 regime .. 5 kernels
  std::string topic;  // "regime", "memory", "itl", "host", "balance", "kernels"
  std::string level;  // "ok" | "note" | "problem"
  std::string text;   // the finding, with its numbers
};

}  // namespace tpb
