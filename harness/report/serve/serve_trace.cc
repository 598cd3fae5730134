// Counters are sampled at each kept step's start on rank 0, markers at its end; both use the
// trace's own origin (metadata.time_origin_s), so they line up with the step bars.
#include "harness/report/serve/serve_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

// Rank 0's step bounds by step number.
std::map<int, std::pair<double, double>> step_bounds(const std::vector<RankTrace>& ranks) {
  std::map<int, std::pair<double, double>> b;
  for (const RankTrace& r : ranks) {
    if (r.rank != 0) continue;
    for (const SegmentRecord& s : r.segs)
      if (s.op == Op::step && s.step >= 0) b[s.step] = {s.t0, s.t1};
  }
  return b;
}

}  // namespace

void add_serve_events(oj& trace, const std::vector<RankTrace>& ranks,
                      const std::vector<StepCounters>& steps,
                      const std::vector<FirstToken>& first_tokens) {
  const oj& meta = trace["metadata"];
  const double origin = meta.value("time_origin_s", 0.0);
  const int kept = meta.value("steps_written", 0);
  const auto bounds = step_bounds(ranks);
  oj& events = trace["traceEvents"];
  for (const StepCounters& c : steps) {
    const auto it = bounds.find(c.step);
    if (c.step >= kept || it == bounds.end()) continue;
    const double ts = (it->second.first - origin) * 1e6;
    events.push_back({{"ph", "C"},
                      {"pid", 0},
                      {"name", "requests"},
                      {"ts", ts},
                      {"args", {{"running", c.running}, {"waiting", c.waiting}}}});
    events.push_back({{"ph", "C"},
                      {"pid", 0},
                      {"name", "tokens"},
                      {"ts", ts},
                      {"args", {{"kv_used", c.kv_used_tokens}, {"prefill", c.prefill_tokens}}}});
  }
  for (const FirstToken& f : first_tokens) {
    const auto it = bounds.find(f.step);
    if (f.step >= kept || it == bounds.end()) continue;
    events.push_back({{"ph", "i"},
                      {"s", "p"},
                      {"pid", 0},
                      {"tid", 0},
                      {"name", "first token, request " + std::to_string(f.request)},
                      {"ts", (it->second.second - origin) * 1e6},
                      {"args", {{"request", f.request}, {"ttft_s", f.ttft_s}}}});
  }
}

std::string empty_serve_trace_reason(const std::vector<RankTrace>& ranks, int trace_steps,
                                     std::size_t steps_run,
                                     const std::vector<int>& timeline_steps) {
  for (const RankTrace& r : ranks)
    for (const SegmentRecord& s : r.segs)
      if (s.step >= 0 && s.step < trace_steps) return "";
  if (steps_run == 0) return "no step ran (every request was rejected, or none was measured)";
  if (!timeline_steps.empty()) {
    const int first = *std::min_element(timeline_steps.begin(), timeline_steps.end());
    return fmt::format(
        "the timeline keeps a sample of {} of the {} steps, the first of them step {}, past the "
        "first {} that --trace-steps writes; --trace-steps {} or more reaches it",
        timeline_steps.size(), steps_run, first, trace_steps, first + 1);
  }
  return fmt::format("no rank stamped any of the first {} steps of the {} that ran", trace_steps,
                     steps_run);
}

}  // namespace tpb
