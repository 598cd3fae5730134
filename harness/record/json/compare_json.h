// compare.json: `tpbench compare --out DIR`'s document, every key of it spelled here.
#pragma once
#include <nlohmann/json.hpp>

#include "harness/record/compare_record.h"

namespace tpb {

// {label_fields, runs[] {run, path, label, points}, rows[] {key, entries[] {run, status,
// metrics, ratio}}, ratio_base}; an entry that is not ok has no metrics and no ratio.
nlohmann::ordered_json to_json(const CompareRecord& c);

}  // namespace tpb
