// Chrome trace writer. "X" (complete) events; pid = world rank, tid 0 = steps, 1 = compute,
// 2 = collectives; "M" events name them.
#include "harness/report/trace_writer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "layers/ops.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;
// One all-reduce instance in a TP group: (group, step, layer, op, occurrence on the rank).
using InstanceKey = std::tuple<int, int, int, int, int>;

// The latest entry into one instance and who made it, with analysis.cc's rule: a tie goes to
// the lowest group rank, and a lone participant (TP=1) arrives last at nothing.
struct Arrival {
  double t = -std::numeric_limits<double>::infinity();
  int group_rank = -1, ranks = 0;
  void add(double t0, int gr) {
    if (t0 > t || (t0 == t && gr < group_rank)) t = t0, group_rank = gr;
    ++ranks;
  }
  bool last(int gr) const { return ranks >= 2 && gr == group_rank; }
};

bool kept(const SegmentRecord& s, int max_steps) {
  return s.step >= 0 && s.step < max_steps;
}

oj name_event(int pid, int tid, const char* what, const std::string& name) {
  return {{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", what}, {"args", {{"name", name}}}};
}

}  // namespace

oj chrome_trace(const std::vector<RankTrace>& ranks, const TraceOptions& o) {
  // Latest entry per instance, matched as analysis.cc matches them; the split itself is
  // analysis.h's wait_at_collective / transfer_at_collective.
  std::map<InstanceKey, Arrival> latest;
  double origin = std::numeric_limits<double>::infinity();
  int steps_written = 0;
  const auto group_kept = [&](const RankTrace& r) {
    return o.max_groups <= 0 || r.group < o.max_groups;
  };
  int groups_written = 0;
  for (const auto& r : ranks) {
    if (!group_kept(r)) continue;
    groups_written = std::max(groups_written, r.group + 1);
    std::map<std::tuple<int, int, int>, int> seen;
    for (const auto& s : r.segs) {
      if (!kept(s, o.max_steps)) continue;
      origin = std::min(origin, s.t0);
      steps_written = std::max(steps_written, s.step + 1);
      if (!s.collective) continue;
      const int n = seen[{s.step, s.layer, static_cast<int>(s.op)}]++;
      latest[{r.group, s.step, s.layer, static_cast<int>(s.op), n}].add(s.t0, r.group_rank);
    }
  }
  if (!std::isfinite(origin)) origin = 0;
  const auto us = [&](double t) { return (t - origin) * 1e6; };

  oj events = oj::array();
  for (const auto& r : ranks) {
    if (!group_kept(r)) continue;
    const int pid = r.rank;
    events.push_back(name_event(pid, 0, "process_name",
                                "rank " + std::to_string(r.rank) + " (TP group " +
                                    std::to_string(r.group) + ", rank " +
                                    std::to_string(r.group_rank) + ")"));
    events.push_back({{"ph", "M"},
                      {"pid", pid},
                      {"name", "process_sort_index"},
                      {"args", {{"sort_index", r.rank}}}});
    events.push_back(name_event(pid, 0, "thread_name", "steps"));
    events.push_back(name_event(pid, 1, "thread_name", "compute"));
    events.push_back(name_event(pid, 2, "thread_name", "collectives"));
    std::map<std::tuple<int, int, int>, int> seen;
    for (const auto& s : r.segs) {
      if (!kept(s, o.max_steps)) continue;
      oj e = {{"ph", "X"}, {"pid", pid}, {"ts", us(s.t0)}, {"dur", (s.t1 - s.t0) * 1e6}};
      if (s.op == Op::step) {
        e["name"] = "step " + std::to_string(s.step);
        e["tid"] = 0;
      } else if (s.collective) {
        const int n = seen[{s.step, s.layer, static_cast<int>(s.op)}]++;
        const Arrival& a = latest.at({r.group, s.step, s.layer, static_cast<int>(s.op), n});
        e["name"] = op_name(s.op);
        e["tid"] = 2;
        e["args"] = {{"step", s.step},
                     {"layer", s.layer},
                     {"wait_us", wait_at_collective(s.t0, s.t1, a.t) * 1e6},
                     {"transfer_us", transfer_at_collective(s.t0, s.t1, a.t) * 1e6},
                     {"arrived_last", a.last(r.group_rank)}};
      } else {
        e["name"] = op_name(s.op);
        e["tid"] = 1;
        e["args"] = {{"step", s.step}, {"layer", s.layer}};
      }
      events.push_back(std::move(e));
    }
  }
  oj meta = o.meta;
  meta["time_origin_s"] = origin;
  meta["steps_written"] = steps_written;  // the first measured steps, up to max_steps
  if (o.max_groups > 0) meta["tp_groups_written"] = groups_written;  // the first TP groups
  meta["clock"] = "common (after clock sync); microseconds from time_origin_s";
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"metadata", meta}};
}

}  // namespace tpb
