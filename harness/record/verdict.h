// One finding of `tpbench diagnose` (report/diagnose.h makes them; results_json.h writes them).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace tpb {

struct Verdict {
  int64_t order = 0;  // the article's step: 1 regime .. 5 kernels
  std::string topic;  // "regime", "memory", "itl", "host", "balance", "link", "kernels"
  std::string level;  // "ok" | "note" | "problem"
  std::string text;   // the finding, with its numbers
  // A stable name for scripts (diagnose --json), where the verdict has one: serve's
  // prefill_interference, chunk_too_large, memory_bound, host_bound, bandwidth_bound,
  // straggler, ok; slow_link (a TP group across hosts whose link sets the pace).
  std::optional<std::string> code;
};

}  // namespace tpb
