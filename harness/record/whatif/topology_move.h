// whatif --topology: a point's all-reduces moved to another interconnect. The TP group's place
// on the new fabric's nodes (run and serve points), and a serve point's step times with the
// moved all-reduces, for the scheduler to replay (serve_whatif.cc).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/model/fabric.h"
#include "harness/record/whatif/serve_replay.h"
#include "harness/record/whatif/whatif_record.h"

namespace tpb {

// The topology counterfactual's reason when whatif was not given --topology.
inline constexpr const char* kAskForTopology =
    "give --topology NAME (a preset of configs/topologies, or a file) to replay the all-reduces "
    "on that interconnect";

struct ServeOnTopology {
  std::vector<double> step_s;  // per measured step, in the step log's order
  std::string modelled;        // what was modelled, for the counterfactual's inputs
};

// Each step keeps its compute, host time and the ranks' skew as measured; its transfer (the
// ranks' mean, from the step log) is replaced by its all-reduces at the model backend's time on
// `opt.topology` for the step's own message. Returns the reason it cannot ("" and `out` filled
// when it can); throws BadInput naming --topology for a preset or file that cannot be loaded.
// Why a TP group of `tp` has no price on `f` (contiguous_group gave none), for a null figure.
std::string uneven_group(int tp, const Fabric& f, const std::string& topology);

std::string serve_on_topology(const nlohmann::ordered_json& point, const ServeReplayBase& b,
                              const WhatifOptions& opt, ServeOnTopology& out);

}  // namespace tpb
