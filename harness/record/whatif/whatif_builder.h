// tpbench whatif: for every point of a measured run or sweep, what the same steps would have
// given without the straggler, without host gaps and without jitter, replayed from the point's
// trace (analysis/replay.h); for a serve point, those and chunked prefill and a bigger KV cache,
// replayed through its scheduler (serve_whatif.h). What cannot be computed is null with a
// reason, never a guess.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "harness/record/whatif/serve_whatif.h"
#include "harness/record/whatif/whatif_record.h"

namespace tpb {

// `results` is the document read from `dir` (whose traces the points name). Throws BadInput
// naming the field when a trace is there but cannot be read.
WhatifRecord build_whatif(const nlohmann::ordered_json& results, const std::string& dir,
                          const WhatifOptions& serve = {});

}  // namespace tpb
