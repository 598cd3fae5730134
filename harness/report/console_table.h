// Compact console report of a point record: one row per rank, an aggregate row, the
// straggler marked. Formatting only; every number comes from the record.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

std::string format_point_table(const nlohmann::ordered_json& point);

}  // namespace tpb
