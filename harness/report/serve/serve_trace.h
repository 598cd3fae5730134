// A serve point's trace.json: the steps' timelines as any point's (trace_writer.h), plus what a
// serving run adds on top, on the same clock: counters of the running and waiting requests and
// of the KV cache at each step's start, and an instant marker where each request got its first
// token (its TTFT, on the virtual clock, in the marker's args).
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/analysis/analysis.h"

namespace tpb {

struct StepCounters {
  int step = 0;
  int64_t running = 0, waiting = 0, kv_used_tokens = 0, prefill_tokens = 0;
};

struct FirstToken {
  int64_t request = 0;
  int step = 0;       // the step that produced it
  double ttft_s = 0;  // virtual clock
};

// Adds "C" (counter) and "i" (instant) events to `trace` (a chrome_trace document of `ranks`)
// for the steps it kept, on the process of world rank 0. The step times are rank 0's.
void add_serve_events(nlohmann::ordered_json& trace, const std::vector<RankTrace>& ranks,
                      const std::vector<StepCounters>& steps,
                      const std::vector<FirstToken>& first_tokens);

// Why the trace of a serve run would hold no step, or "" when it holds one (a step is kept when
// it is among the first `trace_steps` and some rank stamped it): no step ran (`steps_run` 0:
// every request rejected), or the timeline kept a sample of the steps (`timeline_steps`, the
// model backend's; empty: every step) none of which is among the first `trace_steps`.
std::string empty_serve_trace_reason(const std::vector<RankTrace>& ranks, int trace_steps,
                                     std::size_t steps_run, const std::vector<int>& timeline_steps);

}  // namespace tpb
