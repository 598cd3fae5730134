// tpbench whatif on a serve point: each fix replayed through the scheduler that ran, on the
// virtual clock, with the run's own requests and arrivals (record/whatif/serve_replay.h). A fix
// that changes step times moves admissions, batches and every later token, not only the step.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/record/whatif/whatif_record.h"

namespace tpb {

struct ServeWhatifOptions {
  int64_t chunk = 0;      // chunked_prefill's token budget; 0: 512 (at least the batch)
  int64_t kv_budget = 0;  // kv_budget's cache in tokens; 0: every running sequence at its longest
};

// The counterfactuals of serve point `index` (its logs in `dir`), unsorted. Throws BadInput
// naming the field for a log that cannot be read.
std::vector<Counterfactual> serve_counterfactuals(const nlohmann::ordered_json& point, int index,
                                                  const std::string& dir,
                                                  const ServeWhatifOptions& opt);

}  // namespace tpb
