#include "harness/record/results_reader.h"

#include <filesystem>

#include "base/errors.h"
#include "base/read_text.h"

namespace tpb {

std::string results_file_of(const std::string& path) {
  if (std::filesystem::is_directory(path)) return path + "/results.json";
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return path;
  return path + "/results.json";  // a missing directory: name the file that was looked for
}

nlohmann::ordered_json load_results(const std::string& path, const std::string& field) {
  const std::string file = results_file_of(path);
  const std::string text = read_text_file(file, field);
  nlohmann::ordered_json r;
  try {
    r = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw BadInput(field + ": '" + file + "' is malformed JSON: " + json_error_text(e));
  }
  if (!r.is_object() || !r.contains("points") || !r["points"].is_array())
    throw BadInput(field + ": '" + file + "' is not a tpbench results document (no points[])");
  return r;
}

}  // namespace tpb
