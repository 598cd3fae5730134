// Printers of the whatif record: the ranked "what fixing it buys" table (console and
// report.md) and the one-line top fix that diagnose gives with its figure.
#pragma once
#include <optional>
#include <string>

#include "harness/record/whatif/whatif_record.h"

namespace tpb {

// Markdown table, one row per counterfactual, in the record's order (best gain first per point).
std::string whatif_table_md(const WhatifRecord& w);

// The fix that buys the most tokens/s at `point`, in words with its figures; nothing when no
// counterfactual there could be computed or none raises tokens/s.
std::optional<std::string> whatif_top_fix(const WhatifRecord& w, int point);

}  // namespace tpb
