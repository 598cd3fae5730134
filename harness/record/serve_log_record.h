// The two logs a serving point writes beside results.json, one JSON object per line
// (results/SCHEMA.md, "serve logs"): steps.jsonl, TRT-LLM's iteration log with each rank's
// split of the step, and requests.jsonl, each request's life on the virtual clock. A time a
// request never reached (rejected, never admitted) is NaN and written as null.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/serve/workload.h"

namespace tpb {

struct StepRankRecord {
  int64_t rank = 0;
  double compute_s = 0, wait_s = 0, transfer_s = 0;
  // In the step's bounds outside its ops and collectives (results 1.21.0; absent before)
  std::optional<double> host_s;
};

struct StepLogRecord {
  int64_t point = 0, step = 0;
  double t_s = 0;         // virtual clock at the step's end
  double duration_s = 0;  // the group's loop iteration: host work + device step (max over ranks)
  int64_t running = 0, waiting = 0, preempted = 0;
  int64_t batch_tokens = 0, prefill_tokens = 0, decode_tokens = 0, padding_tokens = 0;
  int64_t kv_used_tokens = 0, kv_capacity_tokens = 0;
  double device_time_s = 0;  // max over ranks of the step's own interval
  double host_gap_s = 0;     // duration_s - device_time_s
  std::vector<StepRankRecord> ranks;
};

// The scheduler's outcome as it is, with its point and the first token times.
struct RequestLogRecord : RequestOutcome {
  int64_t point = 0;
  std::vector<double> token_s;  // the first token_times_limit token times
};

}  // namespace tpb
