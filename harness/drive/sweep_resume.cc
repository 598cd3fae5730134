// Ledger reading for --resume.
#include "harness/drive/sweep_resume.h"

#include <filesystem>
#include <fstream>

#include "base/errors.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/point_builder.h"

namespace tpb {

ResumeLedger read_ledger(const std::string& dir) {
  const std::string path = dir + "/points.jsonl";
  std::ifstream f(path, std::ios::binary);
  if (!f || !std::filesystem::is_regular_file(path))
    throw BadInput("--resume: cannot read '" + path + "' (is it a sweep's --out?)");
  std::vector<std::string> raw;
  for (std::string line; std::getline(f, line);) raw.push_back(line);
  ResumeLedger led;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const std::string& line = raw[i];
    if (line.empty()) continue;
    nlohmann::ordered_json p;
    try {
      p = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::parse_error&) {
      // Only the tail can be torn by a kill; anything else means the file was edited.
      if (i + 1 == raw.size()) {
        ++led.torn;
        continue;
      }
      throw BadInput("--resume: line " + std::to_string(i + 1) + " of '" + path +
                     "' is not JSON and is not the last line; refusing to guess");
    }
    PointRecord rec;
    try {
      rec = point_from_json(p);
    } catch (const BadInput&) {
      throw BadInput("--resume: line " + std::to_string(i + 1) + " of '" + path +
                     "' is not a point record");
    }
    if (rec.status == PointStatus::error) {  // a failure may be transient: run it again
      ++led.retried;
      continue;
    }
    bool dup = false;
    for (const auto& q : led.points) dup = dup || to_json(q.params) == to_json(rec.params);
    if (dup) {
      ++led.duplicates;
      continue;
    }
    led.lines.push_back(line);
    led.points.push_back(std::move(rec));
  }
  return led;
}

void rewrite_ledger(const std::string& dir, const ResumeLedger& ledger) {
  std::string text;
  for (const auto& l : ledger.lines) text += l + "\n";
  write_file_atomic(dir + "/points.jsonl", text);
}

nlohmann::ordered_json point_identity(const RunSpec& spec) {
  return params_identity_json(params_record(spec, spec.planned_layers()), !spec.layers_auto);
}

bool same_point(const nlohmann::ordered_json& params, const nlohmann::ordered_json& identity) {
  for (auto it = identity.begin(); it != identity.end(); ++it)
    if (!params.contains(it.key()) || params[it.key()] != it.value()) return false;
  return true;
}

}  // namespace tpb
