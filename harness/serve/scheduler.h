// The serving scheduler: which sequences run in the next step and with how many tokens. Pure
// and deterministic: every rank of the TP group runs its own copy with the same requests and
// the same agreed step durations, so all reach the same plan without talking.
//
// static:     a batch of up to max_running waiting requests is formed when none is running; it
//             runs (prompts whole, in one step) until its longest sequence ends; finished
//             sequences stay in the batch as padding (computed, their tokens discarded), as a
//             static-batching server does; then the next batch is formed.
// continuous: iteration-level (Orca): a finished sequence leaves at once and a waiting one is
//             admitted at the next step.
// chunk > 0:  chunked prefill with a token budget of `chunk` per step, in Sarathi-Serve's
//             stall-free order: running decodes first, then partial prefills, then new prefills.
//             chunk = 0: a prefill takes its step whole (with the running decodes beside it).
// KV:         a paged cache of kv_blocks blocks of block_tokens. A request is admitted only if
//             its prompt's blocks are free; a running sequence that cannot get a block for its
//             next token preempts the most recently admitted running sequence (recompute, as
//             vLLM does by default: its blocks are freed, it goes back to the front of the
//             queue, and its prompt plus the tokens generated so far are prefilled again).
//             A request whose prompt_len + output_len exceeds the whole cache (or max_ctx) is
//             rejected with a reason at arrival; nothing waits forever.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/serve/workload.h"
#include "layers/step_batch.h"

namespace tpb {

enum class SchedulerKind { static_batch, continuous };
const char* scheduler_name(SchedulerKind k);  // "static" | "continuous"

struct SchedulerConfig {
  SchedulerKind kind = SchedulerKind::continuous;
  int64_t max_running = 8;  // sequences in one step (slots)
  int64_t chunk = 0;        // prefill token budget per step; 0 = whole prompts
  int64_t kv_blocks = 0;    // the cache's capacity in blocks
  int64_t block_tokens = 16;
  int64_t max_ctx = 0;      // positions a sequence may reach (prompt + output)
  int64_t concurrency = 0;  // closed loop: requests in flight; 0 = open loop (arrival_s)
};

// What one step runs, and the queue around it when it was planned.
struct StepPlan {
  StepBatch batch;                // seqs[i] belongs to request ids[i]
  std::vector<int64_t> ids;
  int64_t running = 0, waiting = 0;  // after admission, before the step
  int64_t preempted = 0;             // preemptions made to plan this step
  int64_t prefill_tokens = 0, decode_tokens = 0, padding_tokens = 0;
  int64_t kv_used_tokens = 0, kv_capacity_tokens = 0;
  bool empty() const { return batch.seqs.empty(); }
};

// Everything the request went through, on the virtual clock (seconds).
struct RequestLog {
  int64_t id = 0;
  double arrival_s = 0, admitted_s = -1, first_token_s = -1, finish_s = -1;
  int64_t prompt_len = 0, output_len = 0;
  int64_t preemptions = 0;
  bool warmup = false;
  bool rejected = false;
  std::string reason;            // why it was rejected
  std::vector<double> token_s;   // when each output token was produced (output_len of them)
  std::vector<int64_t> token_step;  // the step that produced each (index into the step log)
};

class Scheduler {
 public:
  // `warmup` first requests are marked warmup in their logs. Throws BadInput on a config
  // that can run nothing (max_running < 1, kv_blocks < 1, ...).
  Scheduler(const SchedulerConfig& cfg, std::vector<Request> requests, int64_t warmup);

  // True when every request has finished or been rejected.
  bool done() const;
  // The earliest time > now at which something can be planned (the next arrival), or now when
  // work is ready. The driver skips idle gaps by setting its clock to it.
  double next_ready_s(double now) const;
  // Admits what has arrived by `now` and plans one step; empty when nothing can run yet.
  StepPlan plan(double now);
  // The planned step ran and ended at `end_s`, as step number `step_index`: sequences advance,
  // tokens are stamped, finished sequences free their blocks.
  void finish(const StepPlan& plan, double end_s, int64_t step_index);

  const std::vector<RequestLog>& logs() const;
  int64_t preemptions() const;  // so far
};

}  // namespace tpb
