// whatif --topology on a serve point: each measured step's time with its all-reduces moved to
// another interconnect, for the scheduler to replay (serve_whatif.cc).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/record/whatif/serve_replay.h"
#include "harness/record/whatif/whatif_record.h"

namespace tpb {

struct ServeOnTopology {
  std::vector<double> step_s;  // per measured step, in the step log's order
  std::string modelled;        // what was modelled, for the counterfactual's inputs
};

// Each step keeps its compute, host time and the ranks' skew as measured; its transfer (the
// ranks' mean, from the step log) is replaced by its all-reduces at the model backend's time on
// `opt.topology` for the step's own message. Returns the reason it cannot ("" and `out` filled
// when it can); throws BadInput naming --topology for a preset or file that cannot be loaded.
std::string serve_on_topology(const nlohmann::ordered_json& point, const ServeReplayBase& b,
                              const WhatifOptions& opt, ServeOnTopology& out);

}  // namespace tpb
