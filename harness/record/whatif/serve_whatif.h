// tpbench whatif on a serve point: each fix replayed through the scheduler that ran, on the
// virtual clock, with the run's own requests and arrivals (record/whatif/serve_replay.h). A fix
// that changes step times moves admissions, batches and every later token, not only the step.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/record/whatif/whatif_record.h"

namespace tpb {

// The counterfactuals of serve point `index` (its logs in `dir`), unsorted. Throws BadInput
// naming the field for a log that cannot be read.
std::vector<Counterfactual> serve_counterfactuals(const nlohmann::ordered_json& point, int index,
                                                  const std::string& dir, const WhatifOptions& opt);

}  // namespace tpb
