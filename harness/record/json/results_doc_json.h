// Reading a results document back as records (record/results_doc.h), through the records'
// own field lists (results_json.h): what report, compare, diagnose and export read.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "harness/record/results_doc.h"

namespace tpb {

// `j`, a results document whose points[] load_results has checked. A point reads as a model
// point, else as a collectives point, else as its head alone; the context and the diagnosis as
// records where they read as ones tpbench wrote, else as none. The curve, the whatif section
// and the collectives summary, where present, must read: otherwise BadInput names `field` and
// `file`.
ResultsDoc results_doc_from_json(const nlohmann::ordered_json& j, const std::string& field,
                                 const std::string& file);

// load_results(path, field) (record/results_reader.h), then the above.
ResultsDoc load_results_doc(const std::string& path, const std::string& field);

}  // namespace tpb
