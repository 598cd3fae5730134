// Reading a number out of a results document that may lack it: kept for the points that have
// no record yet (a collectives run's, read by collectives_table.cc and results_json.cc).
#pragma once
#include <nlohmann/json.hpp>

namespace tpb {

// j[k] if j is an object holding a number under k, else 0.
inline double json_number(const nlohmann::ordered_json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
}

}  // namespace tpb
