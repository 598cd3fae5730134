// Reading a JSONL request trace (--trace): one {"arrival_s", "prompt_len", "output_len"} a line.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/errors.h"
#include "harness/serve/workload.h"

namespace tpb {
namespace {

int64_t positive_length(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw BadInput(where + ": missing \"" + key + "\"");
  const auto& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    throw BadInput(where + ": \"" + key + "\" must be an integer >= 1 (got " + v.dump() + ")");
  return v.get<int64_t>();
}

Request parse_line(const std::string& line, const std::string& where, double prev_arrival) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    throw BadInput(where + ": not JSON (" + json_error_text(e) + ")");
  }
  if (!j.is_object()) throw BadInput(where + ": not a JSON object (got " + j.dump() + ")");
  if (!j.contains("arrival_s") || !j["arrival_s"].is_number())
    throw BadInput(where + ": \"arrival_s\" must be a number of seconds");
  Request r;
  r.arrival_s = j["arrival_s"].get<double>();
  if (r.arrival_s < 0)
    throw BadInput(where + ": \"arrival_s\" must be >= 0 (got " + j["arrival_s"].dump() + ")");
  if (r.arrival_s < prev_arrival)
    throw BadInput(where + ": arrivals must not decrease (got " + j["arrival_s"].dump() +
                   " after " + std::to_string(prev_arrival) + ")");
  r.prompt_len = positive_length(j, "prompt_len", where);
  r.output_len = positive_length(j, "output_len", where);
  return r;
}

}  // namespace

std::vector<Request> read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw BadInput("--trace: cannot open " + path);
  std::vector<Request> reqs;
  std::string line;
  double prev = 0;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Request r = parse_line(line, "--trace: " + path + " line " + std::to_string(n), prev);
    r.id = static_cast<int64_t>(reqs.size());
    prev = r.arrival_s;
    reqs.push_back(r);
  }
  if (reqs.empty()) throw BadInput("--trace: " + path + " holds no requests");
  return reqs;
}

}  // namespace tpb
