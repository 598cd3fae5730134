// Reading a point's trace.json (report/trace_writer.h's Chrome trace) back into per-rank
// segments on the common clock, for the replay of `tpbench whatif`.
#pragma once
#include <string>
#include <vector>

#include "harness/analysis/analysis.h"

namespace tpb {

// The ranks of the trace at `path`, each with its group and group rank from the trace's
// process names. Throws BadInput naming `field` when the file cannot be read or parsed.
std::vector<RankTrace> read_trace(const std::string& path, const std::string& field);

}  // namespace tpb
