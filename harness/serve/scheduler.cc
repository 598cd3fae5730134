// The serving scheduler (see scheduler.h for the policy; this file is its mechanics).
#include "harness/serve/scheduler.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "base/errors.h"

namespace tpb {
namespace {

void require(bool ok, const std::string& field, const std::string& what, int64_t got) {
  if (!ok) throw BadInput(field + ": " + what + " (got " + std::to_string(got) + ")");
}

void check(const SchedulerConfig& c, int64_t warmup) {
  require(c.max_running >= 1, "--max-batch", "must be >= 1", c.max_running);
  require(c.kv_blocks >= 1, "--kv-budget", "the KV cache must hold at least one block",
          c.kv_blocks);
  require(c.kv_blocks <= std::numeric_limits<int32_t>::max(), "--kv-budget", "block ids are 32-bit",
          c.kv_blocks);
  require(c.block_tokens >= 1, "--block-tokens", "must be >= 1", c.block_tokens);
  require(c.chunk >= 0, "--chunk", "must be >= 0 (0: whole prompts)", c.chunk);
  require(c.kind == SchedulerKind::static_batch || c.chunk == 0 || c.chunk >= c.max_running,
          "--chunk",
          "the token budget holds a decode of every running sequence, so it must be >= "
          "--max-batch " +
              std::to_string(c.max_running),
          c.chunk);
  require(c.max_ctx >= 0, "--max-ctx", "must be >= 0 (0: the cache is the limit)", c.max_ctx);
  require(c.concurrency >= 0, "--concurrency", "must be >= 0 (0: open loop)", c.concurrency);
  require(c.max_step_tokens >= 0, "--max-step-tokens", "must be >= 0 (0: no limit)",
          c.max_step_tokens);
  require(warmup >= 0, "--warmup-requests", "must be >= 0", warmup);
}

// Why a request can never run, or "" when it can.
std::string never_fits(const Request& r, const SchedulerConfig& c) {
  const int64_t need = r.prompt_len + r.output_len, cache = c.kv_blocks * c.block_tokens;
  const std::string len = "prompt_len + output_len = " + std::to_string(need);
  if (need > cache)
    return len + " exceeds the KV cache (" + std::to_string(c.kv_blocks) + " blocks x " +
           std::to_string(c.block_tokens) + " = " + std::to_string(cache) + " tokens)";
  if (c.max_ctx > 0 && need > c.max_ctx)
    return len + " exceeds max_ctx " + std::to_string(c.max_ctx);
  const bool whole = c.kind == SchedulerKind::static_batch || c.chunk == 0;
  if (whole && c.max_step_tokens > 0 && need > c.max_step_tokens)
    return len + " exceeds the step's token limit " + std::to_string(c.max_step_tokens) +
           " (prompts run whole without --chunk)";
  return "";
}

}  // namespace

const char* scheduler_name(SchedulerKind k) {
  return k == SchedulerKind::static_batch ? "static" : "continuous";
}

Scheduler::Scheduler(const SchedulerConfig& cfg, std::vector<Request> requests, int64_t warmup)
    : cfg_(cfg), pool_(cfg.kv_blocks) {
  check(cfg, warmup);
  // Release order is arrival order; equal arrivals (a closed loop, a burst) go by id.
  std::stable_sort(requests.begin(), requests.end(), [](const Request& a, const Request& b) {
    return a.arrival_s < b.arrival_s || (a.arrival_s == b.arrival_s && a.id < b.id);
  });
  for (const Request& r : requests) {
    if (!index_.emplace(r.id, seqs_.size()).second)
      throw std::logic_error("serve: request id " + std::to_string(r.id) + " given twice");
    RequestLog log;
    log.id = r.id;
    log.arrival_s = r.arrival_s;
    log.prompt_len = r.prompt_len;
    log.output_len = r.output_len;
    log.warmup = static_cast<int64_t>(seqs_.size()) < warmup;
    logs_.push_back(log);
    seqs_.push_back(Seq{.req = r});
  }
  top_up_client(0);
}

bool Scheduler::done() const {
  return settled_ == static_cast<int64_t>(seqs_.size());
}

double Scheduler::next_ready_s(double now) const {
  if (!waiting_.empty() || !running_.empty() || done()) return now;
  if (cfg_.concurrency == 0 && next_release_ < seqs_.size())
    return std::max(now, seqs_[next_release_].req.arrival_s);
  return now;
}

const std::vector<RequestLog>& Scheduler::logs() const {
  return logs_;
}
int64_t Scheduler::preemptions() const {
  return preemptions_;
}

// Arrival: rejected at once when it can never fit, else queued (and in flight for the client).
void Scheduler::release(size_t i, double t) {
  logs_[i].arrival_s = t;
  const std::string why = never_fits(seqs_[i].req, cfg_);
  if (!why.empty()) {
    logs_[i].rejected = true;
    logs_[i].reason = why;
    seqs_[i].phase = Phase::done;
    ++settled_;
    return;
  }
  seqs_[i].phase = Phase::waiting;
  waiting_.push_back(i);
  ++in_flight_;
}

void Scheduler::release_arrivals(double now) {
  if (cfg_.concurrency > 0) return;  // the client releases, in top_up_client
  while (next_release_ < seqs_.size() && seqs_[next_release_].req.arrival_s <= now) {
    release(next_release_, seqs_[next_release_].req.arrival_s);
    ++next_release_;
  }
}

// The closed-loop client: a rejection frees its place at once, so the loop runs on.
void Scheduler::top_up_client(double t) {
  while (cfg_.concurrency > 0 && in_flight_ < cfg_.concurrency && next_release_ < seqs_.size())
    release(next_release_++, t);
}

size_t Scheduler::last_live() const {
  for (size_t k = running_.size(); k-- > 0;)
    if (seqs_[running_[k]].phase == Phase::running) return running_[k];
  throw std::logic_error("serve: preemption with no running sequence");
}

// Recompute preemption: the blocks go, the tokens made so far stay (and keep their times), and
// the next admission prefills prompt + generated again. Front of the queue: it came first.
void Scheduler::preempt(size_t i) {
  Seq& s = seqs_[i];
  pool_.give_back(s.blocks);
  s.computed = s.target = 0;
  s.phase = Phase::waiting;
  running_.erase(std::find(running_.begin(), running_.end(), i));
  waiting_.push_front(i);
  ++logs_[i].preemptions;
  ++preemptions_;
}

void Scheduler::complete(size_t i, double t) {
  logs_[i].finish_s = t;
  ++settled_;
  --in_flight_;
  if (cfg_.kind == SchedulerKind::static_batch) {
    seqs_[i].phase = Phase::padding;  // keeps its slot and blocks until the batch ends
  } else {
    seqs_[i].phase = Phase::done;
    pool_.give_back(seqs_[i].blocks);
    running_.erase(std::find(running_.begin(), running_.end(), i));
  }
  top_up_client(t);
}

bool Scheduler::has_live() const {
  return std::any_of(running_.begin(), running_.end(),
                     [this](size_t i) { return seqs_[i].phase == Phase::running; });
}

void Scheduler::end_static_batch_if_drained() {
  if (cfg_.kind != SchedulerKind::static_batch || has_live()) return;
  for (const size_t i : running_) {
    pool_.give_back(seqs_[i].blocks);
    seqs_[i].phase = Phase::done;
  }
  running_.clear();
}

}  // namespace tpb
