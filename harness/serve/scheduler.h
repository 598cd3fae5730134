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
//
// The details the summary above leaves open, settled here as vLLM (v0) settles them:
// - Admission takes the blocks of the whole prefill (prompt + generated) at once, also when it
//   is chunked, so that a half-prefilled sequence never waits for blocks. kv_used_tokens counts
//   allocated blocks (times block_tokens); a slice's table lists the first ceil((cached +
//   new_tokens) / block_tokens) of its blocks, the ones its step touches.
// - Admission is first come, first served: a front request that does not fit blocks the queue
//   (kv_blocked). A step that preempted admits nothing new unless it would otherwise be empty,
//   so a victim is not readmitted at once into the room it just gave up.
// - Static batching ignores `chunk`, and a padding row recomputes its sequence's last position
//   (cached = its length - 1, one token) in its own blocks, so it never needs a new block.
//   Preemption there picks among live sequences only; padding is finished work.
// - Closed loop: a request's arrival_s is the time the client released it (0 for the first
//   `concurrency`; then the finish, or the rejection, of the one it replaces). Its finish is the
//   step of its last token, also in a static batch that still runs on as padding.
// - The token budget counts the decodes too (Sarathi), so a continuous `chunk` must be at least
//   max_running (vLLM's max_num_batched_tokens >= max_num_seqs): every decode always fits.
// - max_ctx = 0 means no limit beyond the cache.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "harness/serve/block_pool.h"
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
  // Without a chunk (and in a static batch), the most tokens one step may hold, decodes and
  // whole prompts together (vLLM's max_num_batched_tokens); 0 = no limit. A prompt is admitted
  // only whole, when it fits what the step has left; a request whose prompt_len + output_len
  // (its longest recompute) exceeds it is rejected at arrival.
  int64_t max_step_tokens = 0;
};

// What one step runs, and the queue around it when it was planned.
struct StepPlan {
  StepBatch batch;  // seqs[i] belongs to request ids[i]
  std::vector<int64_t> ids;
  std::vector<bool> prompt;          // seqs[i] is a prompt row (its prefill, or its recompute)
  int64_t running = 0, waiting = 0;  // after admission, before the step
  int64_t preempted = 0;             // preemptions made to plan this step
  int64_t prefill_tokens = 0, decode_tokens = 0, padding_tokens = 0;
  int64_t kv_used_tokens = 0, kv_capacity_tokens = 0;
  // The front of the queue had a free slot (and budget) but not the blocks for its prompt:
  // the cache, not the slots, held it back (the memory wall's signal).
  bool kv_blocked = false;
  bool empty() const { return batch.seqs.empty(); }
};

// Everything the request went through: its outcome and every output token's time and step.
struct RequestLog : RequestOutcome {
  std::vector<double> token_s;      // when each output token was produced (output_len of them)
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

 private:
  enum class Phase { pending, waiting, running, padding, done };
  // One request's progress; logs_[i] is its log.
  struct Seq {
    Request req;
    Phase phase = Phase::pending;
    int64_t computed = 0;   // positions in the KV cache
    int64_t target = 0;     // positions to prefill since its last admission (prompt + generated)
    int64_t generated = 0;  // output tokens so far
    std::vector<int32_t> blocks;
  };

  void release(size_t i, double t);
  void release_arrivals(double now);
  void top_up_client(double t);
  void preempt(size_t i);
  void complete(size_t i, double t);
  void end_static_batch_if_drained();
  void schedule_decodes(StepPlan& p, int64_t& budget);
  void schedule_prefills(StepPlan& p, int64_t& budget);
  void admit_waiting(StepPlan& p, int64_t& budget, double now);
  void add_slice(StepPlan& p, size_t i, int64_t cached, int64_t n, bool samples);
  size_t last_live() const;
  bool has_live() const;

  SchedulerConfig cfg_;
  std::vector<Seq> seqs_;  // in release order (arrival, then id)
  std::vector<RequestLog> logs_;
  std::map<int64_t, size_t> index_;  // request id -> position in seqs_
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;  // admission order; static: the batch, padding included
  BlockPool pool_;
  size_t next_release_ = 0;
  int64_t in_flight_ = 0, settled_ = 0, preemptions_ = 0;
  bool planned_ = false;  // a non-empty plan awaits finish()
};

}  // namespace tpb
