// A serving point's record and logs, built on rank 0 from the run: the timeline analysis that
// every point gets (per rank, collectives, straggler, clock), vLLM's serving metrics from the
// request logs, the per-step and per-request log lines, and the point's place on the curve.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/analysis/peaks.h"
#include "harness/config/serve_spec.h"
#include "harness/drive/serve/serve_runner.h"
#include "harness/record/point_record.h"
#include "harness/record/serve_log_record.h"
#include "harness/serve/curve.h"
#include "layers/device.h"

namespace tpb {

// Token times kept per request in requests.jsonl (the metrics use all of them).
inline constexpr int64_t kTokenTimesLimit = 4096;

struct ServePoint {
  PointRecord record;
  std::optional<nlohmann::ordered_json> trace;  // with a trace name and --trace-steps > 0
  std::string trace_empty;  // why the trace holds no step ("" when it holds one, or is none)
  std::vector<StepLogRecord> steps;
  std::vector<RequestLogRecord> requests;
  CurveInput curve;
};

// `point_index` numbers the log lines. The record names steps_file and requests_file, and
// `trace_name` (inside the results folder; empty: no trace) when --trace-steps > 0.
ServePoint build_serve_point(const ServeSpec& spec, std::size_t load_index, const ServeRun& run,
                             const Peaks& peaks, const DeviceCaps& caps, int64_t point_index,
                             const std::string& trace_name);

// A point that did not fit, on the curve as `oom` (the memory wall when it is the first).
ServePoint oom_serve_point(const ServeSpec& spec, std::size_t load_index, PointRecord oom);

// The serve params of a point (also for oom points).
ServeParamsRecord serve_params_record(const ServeSpec& spec, std::size_t load_index,
                                      int64_t kv_capacity_tokens);

}  // namespace tpb
