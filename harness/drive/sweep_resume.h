// `tpbench sweep --resume DIR`: what an interrupted sweep already finished. points.jsonl is the
// ledger (appended and fsynced per point), so it survives a SIGKILL; at most its last line is
// torn, and that line is dropped.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/config/run_spec.h"
#include "harness/record/point_record.h"

namespace tpb {

struct ResumeLedger {
  // Kept records, deduplicated (first wins), with their exact text so that rewriting the
  // ledger leaves finished points byte-identical.
  std::vector<std::string> lines;
  std::vector<PointRecord> points;
  int torn = 0;        // unparsable lines dropped (a torn tail)
  int retried = 0;     // status "error" records dropped so the point runs again
  int duplicates = 0;  // repeated params dropped
};

// Reads DIR/points.jsonl. A missing ledger is BadInput naming --resume. A corrupt line that is
// not the last one is also refused: that is not an interrupted write, and guessing could lose
// points.
ResumeLedger read_ledger(const std::string& dir);

// Rewrites DIR/points.jsonl to hold exactly the kept lines (atomic: temp + rename).
void rewrite_ledger(const std::string& dir, const ResumeLedger& ledger);

// The params that identify a point across launches: the point's params without the resolved
// layer count when layers were left to the memory plan (it is an outcome, not an input).
nlohmann::ordered_json point_identity(const RunSpec& spec);

// Whether a recorded point's params match `identity`.
bool same_point(const nlohmann::ordered_json& params, const nlohmann::ordered_json& identity);

}  // namespace tpb
