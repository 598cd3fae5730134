// Reading a tpbench results document back: one loader, so every verb names its own option in
// the same one-line errors. The printers (report, compare, diagnose, export) read it as records
// through record/json/results_doc_json.h; the JSON itself is for the readers that edit or
// replay the document (whatif, run --from, serve --resume).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

// `path` is a results directory (its results.json is read) or a .json file. Throws BadInput
// naming `field` when the file is unreadable, not JSON, or has no points[] array.
nlohmann::ordered_json load_results(const std::string& path, const std::string& field);

// The file load_results reads for `path`.
std::string results_file_of(const std::string& path);

}  // namespace tpb
