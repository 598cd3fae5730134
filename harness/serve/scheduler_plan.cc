// Planning one step and taking its result back: the Scheduler's per-step half (scheduler.cc
// holds the request lifecycle). Sarathi-Serve's stall-free order: running decodes, then
// partial prefills, then new prefills, all inside one token budget.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "harness/serve/scheduler.h"

namespace tpb {

void Scheduler::add_slice(StepPlan& p, size_t i, int64_t cached, int64_t n, bool samples) {
  const Seq& s = seqs_[i];
  SeqSlice slice;
  slice.cached = cached;
  slice.new_tokens = n;
  slice.samples = samples;
  const auto touched = blocks_for(cached + n, cfg_.block_tokens);
  slice.blocks.assign(s.blocks.begin(), s.blocks.begin() + touched);
  p.batch.seqs.push_back(std::move(slice));
  p.ids.push_back(s.req.id);
  const bool prompt = s.phase != Phase::padding && s.computed < s.target;
  p.prompt.push_back(prompt);
  if (s.phase == Phase::padding)
    p.padding_tokens += n;
  else if (prompt)
    p.prefill_tokens += n;
  else
    p.decode_tokens += n;
}

// Every running sequence past its prefill gets one token, in admission order. One that needs a
// block and finds none preempts the most recently admitted live sequence, itself last (vLLM).
void Scheduler::schedule_decodes(StepPlan& p, int64_t& budget) {
  for (size_t pos = 0; pos < running_.size();) {
    const size_t i = running_[pos];
    Seq& s = seqs_[i];
    if (s.phase == Phase::padding) {
      add_slice(p, i, s.computed - 1, 1, true);
      --budget;
      ++pos;
      continue;
    }
    if (s.computed < s.target) {  // still prefilling: its turn comes after the decodes
      ++pos;
      continue;
    }
    const auto need =
        blocks_for(s.computed + 1, cfg_.block_tokens) - static_cast<int64_t>(s.blocks.size());
    bool evicted_self = false;
    while (need > pool_.free_blocks() && !evicted_self) {
      const size_t victim = last_live();
      preempt(victim);
      ++p.preempted;
      evicted_self = victim == i;
    }
    if (evicted_self) continue;  // running_[pos] is now the next one (victims sit after pos)
    if (need > 0) pool_.take(need, s.blocks);
    add_slice(p, i, s.computed, 1, true);
    --budget;
    ++pos;
  }
}

// Sequences admitted at an earlier step whose prompt is not yet all in the cache.
void Scheduler::schedule_prefills(StepPlan& p, int64_t& budget) {
  for (const size_t i : running_) {
    const Seq& s = seqs_[i];
    if (s.phase != Phase::running || s.computed >= s.target) continue;
    const int64_t n = std::min(s.target - s.computed, budget);
    if (n <= 0) break;
    add_slice(p, i, s.computed, n, s.computed + n == s.target);
    budget -= n;
  }
}

// First come, first served while there is a slot, budget and the blocks of the whole prefill.
void Scheduler::admit_waiting(StepPlan& p, int64_t& budget, double now) {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < cfg_.max_running &&
         budget > 0) {
    const size_t i = waiting_.front();
    Seq& s = seqs_[i];
    const int64_t target = s.req.prompt_len + s.generated;
    // Without a chunk a prompt runs whole: it waits for a step with room for all of it.
    const bool whole = cfg_.kind == SchedulerKind::static_batch || cfg_.chunk == 0;
    if (whole && target > budget) return;
    const int64_t need = blocks_for(target, cfg_.block_tokens);
    if (need > pool_.free_blocks()) {
      p.kv_blocked = true;
      return;
    }
    waiting_.pop_front();
    pool_.take(need, s.blocks);
    s.target = target;
    s.computed = 0;
    s.phase = Phase::running;
    running_.push_back(i);
    if (logs_[i].admitted_s < 0) logs_[i].admitted_s = now;
    const int64_t n = std::min(target, budget);
    add_slice(p, i, 0, n, n == target);
    budget -= n;
  }
}

StepPlan Scheduler::plan(double now) {
  if (planned_) throw std::logic_error("serve: plan() again before finish() of the last step");
  release_arrivals(now);
  StepPlan p;
  const bool is_static = cfg_.kind == SchedulerKind::static_batch;
  const bool chunked = !is_static && cfg_.chunk > 0;
  int64_t budget = chunked                    ? cfg_.chunk
                   : cfg_.max_step_tokens > 0 ? cfg_.max_step_tokens
                                              : std::numeric_limits<int64_t>::max();
  if (is_static) {
    if (!running_.empty()) schedule_decodes(p, budget);
    if (!has_live()) {
      // Preemption took the batch's last live sequence: what is left is padding with nothing
      // to pad for, so the batch ends here and a new one (prompts whole) is formed at once.
      const int64_t preempted = p.preempted;
      p = StepPlan{};
      p.preempted = preempted;
      end_static_batch_if_drained();
      admit_waiting(p, budget, now);
    }
  } else {
    schedule_decodes(p, budget);
    schedule_prefills(p, budget);
    if (p.preempted == 0 || p.empty()) admit_waiting(p, budget, now);
  }
  p.running = static_cast<int64_t>(running_.size());
  p.waiting = static_cast<int64_t>(waiting_.size());
  p.kv_used_tokens = pool_.used_blocks() * cfg_.block_tokens;
  p.kv_capacity_tokens = pool_.capacity() * cfg_.block_tokens;
  planned_ = !p.empty();
  return p;
}

void Scheduler::finish(const StepPlan& plan, double end_s, int64_t step_index) {
  if (plan.empty()) return;
  if (!planned_) throw std::logic_error("serve: finish() of a step that was not planned");
  planned_ = false;
  for (size_t k = 0; k < plan.ids.size(); ++k) {
    const size_t i = index_.at(plan.ids[k]);
    Seq& s = seqs_[i];
    const SeqSlice& slice = plan.batch.seqs[k];
    if (s.phase == Phase::padding) continue;  // its token is discarded
    if (s.phase != Phase::running)
      throw std::logic_error("serve: request " + std::to_string(plan.ids[k]) + " not running");
    s.computed = slice.cached + slice.new_tokens;
    if (!slice.samples) continue;
    ++s.generated;
    RequestLog& log = logs_[i];
    log.token_s.push_back(end_s);
    log.token_step.push_back(step_index);
    if (s.generated == 1) log.first_token_s = end_s;
    if (s.generated == s.req.output_len) complete(i, end_s);
  }
  end_static_batch_if_drained();
}

}  // namespace tpb
