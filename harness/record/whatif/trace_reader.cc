// The inverse of chrome_trace for what the replay needs: "X" events become segments (tid 0:
// the step bounds, named "step K"; tid 1: compute; tid 2: collectives), microseconds become
// seconds, and the "M" process names give each rank's TP group.
#include "harness/record/whatif/trace_reader.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/errors.h"
#include "layers/ops.h"

namespace tpb {

namespace {

SegmentRecord segment_of(const nlohmann::json& e, const std::string& where) {
  SegmentRecord s;
  const double ts = e.at("ts").get<double>(), dur = e.at("dur").get<double>();
  s.t0 = ts * 1e-6;
  s.t1 = (ts + dur) * 1e-6;
  const std::string name = e.at("name").get<std::string>();
  if (e.at("tid").get<int>() == 0) {
    s.op = Op::step;
    if (std::sscanf(name.c_str(), "step %d", &s.step) != 1)
      throw BadInput(where + ": step event named '" + name + "'");
    return s;
  }
  const auto op = enum_from_name<Op>(kOpNames, name);
  if (!op) throw BadInput(where + ": unknown op '" + name + "'");
  s.op = *op;
  s.collective = op_is_collective(*op);
  s.step = e.at("args").at("step").get<int>();
  s.layer = e.at("args").at("layer").get<int>();
  return s;
}

}  // namespace

std::vector<RankTrace> read_trace(const std::string& path, const std::string& field) {
  std::ifstream in(path);
  if (!in) throw BadInput(field + ": cannot read '" + path + "'");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(field + ": '" + path + "' is not JSON (" + json_error_text(e) + ")");
  }
  if (!doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw BadInput(field + ": '" + path + "' has no traceEvents array");
  std::map<int, RankTrace> ranks;
  std::size_t i = 0;  // the event being read, named when it is not one tpbench writes
  try {
    for (; i < doc["traceEvents"].size(); ++i) {
      const nlohmann::json& e = doc["traceEvents"][i];
      const std::string ph = e.value("ph", "");
      const int pid = e.at("pid").get<int>();
      RankTrace& r = ranks[pid];
      r.rank = pid;
      if (ph == "M" && e.value("name", "") == "process_name") {
        const std::string n = e.at("args").at("name").get<std::string>();
        int world = 0;
        std::sscanf(n.c_str(), "rank %d (TP group %d, rank %d)", &world, &r.group, &r.group_rank);
      } else if (ph == "X") {
        r.segs.push_back(segment_of(e, field + ": '" + path + "'"));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(field + ": '" + path + "': traceEvents[" + std::to_string(i) +
                   "] is not an event tpbench writes (" + json_error_text(e) + ")");
  }
  std::vector<RankTrace> out;
  for (auto& [pid, r] : ranks) out.push_back(std::move(r));
  return out;
}

}  // namespace tpb
