// Each section is read by the function that reads it everywhere (point_from_json,
// context_from_json, ...), and each top-level section is named by the function the writer
// names it with, so every key here is the writer's own.
#include "harness/record/json/results_doc_json.h"

#include "base/errors.h"
#include "harness/record/json/results_json.h"
#include "harness/record/results_reader.h"
#include "harness/record/whatif/whatif_json.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

ResultsPoint point_of(const oj& j) {
  ResultsPoint p;
  p.head = point_head_from_json(j);
  p.model = try_point_from_json(j);
  if (!p.model) p.coll = try_coll_point_from_json(j);
  return p;
}

// A section a printer cannot do without when it is there: one that does not read is an error
// naming the file.
template <class F>
auto strict(const oj& j, const char* section, const std::string& field, const std::string& file,
            F read) -> std::optional<decltype(read(j))> {
  if (!j.contains(section)) return std::nullopt;
  try {
    return read(j[section]);
  } catch (const BadInput& e) {
    throw BadInput(field + ": '" + file + "': " + section + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(field + ": '" + file + "': " + section + ": " + json_error_text(e));
  }
}

// A section that only says how the run went: one that does not read (absent, or from a
// writer before the record) is none.
template <class F>
auto lenient(const oj& j, const char* section, F read) -> std::optional<decltype(read(j))> {
  if (!j.contains(section)) return std::nullopt;
  try {
    return read(j[section]);
  } catch (const BadInput&) {
    return std::nullopt;
  }
}

}  // namespace

ResultsDoc results_doc_from_json(const oj& j, const std::string& field, const std::string& file) {
  ResultsDoc doc;
  doc.context = lenient(j, context_section(), context_from_json);
  if (j.contains(points_section()) && j[points_section()].is_array())
    for (const oj& p : j[points_section()]) doc.points.push_back(point_of(p));
  doc.curve = strict(j, curve_section(), field, file, curve_from_json);
  doc.diagnosis = lenient(j, diagnosis_section(), verdicts_from_json);
  doc.collectives_summary = strict(j, coll_summary_section(), field, file, coll_summary_from_json);
  doc.whatif = strict(j, whatif_section(), field, file, whatif_from_json);
  return doc;
}

ResultsDoc load_results_doc(const std::string& path, const std::string& field) {
  return results_doc_from_json(load_results(path, field), field, results_file_of(path));
}

}  // namespace tpb
