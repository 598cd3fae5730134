// One finding of `tpbench diagnose` (report/diagnose.h makes them; results_json.h writes them),
// and the document `diagnose --json` prints (record/json/results_doc_json.h writes it).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/record/curve_record.h"

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

// `diagnose --json`: a point's verdicts with what identifies it as written (a collectives
// point's params are its own), and one file's points, its findings across them and its curve.
struct PointDiagnosis {
  int64_t point = 0;  // index in points[]
  nlohmann::ordered_json params;
  std::string status;
  std::vector<Verdict> verdicts;
};
struct FileDiagnosis {
  std::string file;
  std::vector<PointDiagnosis> points;
  std::vector<Verdict> across_points;
  std::optional<CurveRecord> curve;
};

}  // namespace tpb
