// The event keys are trace_writer.cc's (Chrome's trace event format): an event is moved, never
// made or dropped, so the merged trace holds exactly the events of its inputs.
#include "harness/report/trace/merged_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

const oj& events_of(const oj& trace) {
  static const oj none = oj::array();
  const auto it = trace.find("traceEvents");
  return it != trace.end() && it->is_array() ? *it : none;
}

oj meta_of(const oj& trace) {
  const auto it = trace.find("metadata");
  return it != trace.end() && it->is_object() ? *it : oj::object();
}

double origin_of(const oj& trace) {
  const oj m = meta_of(trace);
  return m.contains("time_origin_s") && m["time_origin_s"].is_number()
             ? m["time_origin_s"].get<double>()
             : 0.0;
}

// Processes one input trace needs: its largest pid + 1 (a pid is a world rank).
int64_t ranks_of(const oj& trace) {
  int64_t w = 0;
  for (const oj& e : events_of(trace))
    if (e.contains("pid") && e["pid"].is_number_integer())
      w = std::max(w, e["pid"].get<int64_t>() + 1);
  return w;
}

// e[key] where it is a string, else "": the merge moves events, it does not judge them.
std::string string_at(const oj& e, const char* key) {
  return e.is_object() && e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : "";
}

oj moved(oj e, int64_t base, double shift_us, const std::string& prefix) {
  if (!e.is_object()) return e;
  if (e.contains("pid") && e["pid"].is_number_integer()) e["pid"] = base + e["pid"].get<int64_t>();
  if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + shift_us;
  if (string_at(e, "ph") != "M" || !e.contains("args") || !e["args"].is_object()) return e;
  const std::string what = string_at(e, "name");
  if (what == "process_name") {
    const std::string name = string_at(e["args"], "name");
    e["args"]["name"] = prefix + (name.empty() ? "?" : name);
  }
  if (what == "process_sort_index" && e.contains("pid")) e["args"]["sort_index"] = e["pid"];
  return e;
}

}  // namespace

std::size_t trace_events(const oj& trace) {
  return events_of(trace).size();
}

oj merged_trace(const std::vector<PointTrace>& traces,
                const std::vector<std::size_t>& points_per_source) {
  int64_t w = 1;
  std::map<std::size_t, double> earliest;  // per document: its traces share its clock
  for (const PointTrace& t : traces) {
    w = std::max(w, ranks_of(t.trace));
    auto it = earliest.try_emplace(t.source, std::numeric_limits<double>::infinity()).first;
    it->second = std::min(it->second, origin_of(t.trace));
  }
  const bool several = points_per_source.size() > 1;
  oj events = oj::array(), points = oj::array();
  for (const PointTrace& t : traces) {
    std::size_t before = 0;  // points of the documents before this one
    for (std::size_t s = 0; s < t.source && s < points_per_source.size(); ++s)
      before += points_per_source[s];
    const int64_t base = static_cast<int64_t>(before + t.point) * w;
    const double origin = origin_of(t.trace), shift_us = (origin - earliest[t.source]) * 1e6;
    const std::string prefix =
        (several ? fmt::format("results {} ", t.source) : "") + fmt::format("point {} ", t.point);
    const oj& in = events_of(t.trace);
    for (const oj& e : in) events.push_back(moved(e, base, shift_us, prefix));
    points.push_back({{"results", t.source},
                      {"point", t.point},
                      {"file", t.file},
                      {"pid_base", base},
                      {"time_origin_s", origin},
                      {"shift_us", shift_us},
                      {"events", in.size()},
                      {"params", meta_of(t.trace).value("params", oj())}});
  }
  const oj meta = {
      {"tool", "tpbench report --trace merged"},
      {"pid_rule", "pid = (points of the documents before + point) * ranks_per_point + rank"},
      {"ranks_per_point", w},
      {"clock",
       "each document's points on its run's common clock, microseconds from its earliest "
       "trace's time_origin_s"},
      {"points", points}};
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"metadata", meta}};
}

}  // namespace tpb
