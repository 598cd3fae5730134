// The results' whatif section and `tpbench whatif --json`: every field name of a
// counterfactual is spelled in whatif_json.cc and nowhere else.
#pragma once
#include <nlohmann/json.hpp>

#include "harness/record/whatif/whatif_record.h"

namespace tpb {

nlohmann::ordered_json to_json(const WhatifRecord& w);
WhatifRecord whatif_from_json(const nlohmann::ordered_json& j);
const char* whatif_section();

}  // namespace tpb
