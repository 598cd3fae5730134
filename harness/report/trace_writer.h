// trace.json: the gathered per-rank timelines of one point in the Chrome trace event format,
// which Perfetto (ui.perfetto.dev) and chrome://tracing open. ARCHITECTURE's "trace" reporter.
// One process per rank, with a "compute" and a "collectives" track and the steps above them;
// each all-reduce carries its Scalasca split (wait, transfer) as args, from the same
// definitions as the analysis, so a user can see which collective a wait figure came from.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/analysis/analysis.h"

namespace tpb {

struct TraceOptions {
  int max_steps = 20;  // measured steps kept (the first ones); warm-up is never written
  // TP groups kept (the first ones; 0 = all): whole groups, so each kept collective's wait
  // still sees every arrival. A thousand virtual ranks would make a trace no viewer opens.
  int max_groups = 0;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();  // params, units, source
};

// Builds the document. Timestamps are microseconds from the first kept record.
nlohmann::ordered_json chrome_trace(const std::vector<RankTrace>& ranks, const TraceOptions& o);

}  // namespace tpb
