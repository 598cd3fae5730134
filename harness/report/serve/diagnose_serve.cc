// Thresholds are stated in each message, so a reader can disagree with them.
#include "harness/report/serve/diagnose_serve.h"

#include <fmt/format.h>

#include <cmath>

namespace tpb {

namespace {

// 2. The achieved batch against the queue: a long queue beside a small running batch is the
// KV cache, not compute.
void memory_verdict(const PointRecord& p, std::vector<Verdict>& v) {
  const ServeRunRecord& s = *p.serve;
  const int64_t max_batch = p.params.serve ? p.params.serve->max_batch : 0;
  if (s.kv_full_steps > 0 || s.preemptions > 0) {
    v.push_back({2, "memory", "problem",
                 fmt::format("the KV cache ({} tokens) held back waiting requests at {} of {} "
                             "steps (up to {} waiting) and forced {} preemptions, while the "
                             "running batch reached {} of {}: memory limits the batch; shrink "
                             "the KV cache per token (dtype, shorter contexts) or give it memory",
                             s.kv_capacity_tokens, s.kv_full_steps, s.steps, s.max_waiting,
                             s.preemptions, s.max_running, max_batch),
                 "memory_bound"});
    return;
  }
  v.push_back({2, "memory", "ok",
               fmt::format("the KV cache ({} tokens, peak {} used) never held a request back; "
                           "the running batch reached {} of {}, up to {} waiting",
                           s.kv_capacity_tokens, s.kv_peak_tokens, s.max_running, max_batch,
                           s.max_waiting)});
}

// An open loop that finishes under 95% of the offered rate is past capacity.
constexpr double kPastCapacity = 0.95;

// Why admission waited: the cache, a static batch, the batch's limit, or the token budget.
std::string admission_limit(const PointRecord& p) {
  const ServeRunRecord& s = *p.serve;
  const ServeParamsRecord sp = p.params.serve.value_or(ServeParamsRecord{});
  if (s.kv_full_steps > 0)
    return fmt::format("the KV cache held them back at {} steps (the memory verdict)",
                       s.kv_full_steps);
  if (sp.scheduler == "static")
    return "the static scheduler admits a batch only once the last has finished (--scheduler "
           "continuous)";
  const double done = p.metrics->request_throughput.value_or(NAN);
  // Under an open loop the finished rate against the offered one says whether the load is past
  // capacity or only bursts past it (Poisson arrivals fill the batch for a while).
  std::string load = fmt::format("{:.2f} requests/s finished", done);
  if (sp.rate)
    load += fmt::format(" against {:g} offered: {}", *sp.rate,
                        done < kPastCapacity * *sp.rate
                            ? "past this server's capacity; lower the load or add replicas"
                            : "bursts past what the batch holds");
  if (sp.max_batch > 0 && s.max_running >= sp.max_batch)
    return fmt::format(
        "the running batch reached its limit of {} sequences (--max-batch, "
        "vLLM's max_num_seqs) with up to {} waiting behind it ({}); raise the "
        "limit where memory allows (whatif's max_batch replays a larger one)",
        sp.max_batch, s.max_waiting, load);
  return fmt::format(
      "the running batch reached {} of {}, so the token budget per step "
      "(--max-step-tokens {}, --chunk {}) admitted prompts no faster ({})",
      s.max_running, sp.max_batch, sp.max_step_tokens, sp.chunk, load);
}

// Queueing makes TTFT when requests wait for admission longer than their own prefill takes;
// then TTFT says nothing about the prompt and everything about the load.
constexpr double kQueueBoundShare = 0.5;

// 2. TTFT split as vLLM's request phases split it: the wait for admission (queue_s) and the
// prompt's own prefill, admission to first token (ttft_admitted_s). Absent before 1.22.0.
void ttft_verdict(const PointRecord& p, std::vector<Verdict>& v) {
  const MetricsRecord& m = *p.metrics;
  if (!m.ttft_s || !(m.ttft_s->n > 0) || !m.queue_s || !m.ttft_admitted_s) return;
  const LatencyStats &t = *m.ttft_s, &q = *m.queue_s, &a = *m.ttft_admitted_s;
  const double share = t.mean > 0 ? q.mean / t.mean : 0;
  const std::string head = fmt::format(
      "TTFT p50 {:.1f} ms, p99 {:.1f} ms: {:.0f}% of it waiting for admission (queue p50 {:.1f} "
      "ms, p99 {:.1f} ms), the rest the prompt's own prefill (admission to first token p50 {:.1f} "
      "ms, p99 {:.1f} ms)",
      t.p50 * 1e3, t.p99 * 1e3, 100 * share, q.p50 * 1e3, q.p99 * 1e3, a.p50 * 1e3, a.p99 * 1e3);
  if (share >= kQueueBoundShare) {
    v.push_back({2, "ttft", "problem",
                 head +
                     ": queueing (over half the mean TTFT); requests arrived faster than "
                     "the server admitted them: " +
                     admission_limit(p),
                 "queueing"});
    return;
  }
  v.push_back({2, "ttft", "ok", head});
}

// The prompt behind a gap whose largest part is prefill (1.22.0 logs name it): the largest
// prompt row of its step, and how many others shared the step.
std::string prompt_text(const LateTokenRecord& w) {
  if (w.part != "prefill" || !w.prefilled || w.prefilled->empty()) return "";
  const PrefillRowRecord& r = w.prefilled->front();
  std::string s = r.cached > 0
                      ? fmt::format(": a {}-token chunk of request {}'s prompt ({} already cached)",
                                    r.tokens, r.request, r.cached)
                      : fmt::format(": request {}'s {}-token prompt", r.request, r.tokens);
  const int64_t others = w.prefill_requests.value_or(1) - 1;
  if (others > 0) s += fmt::format(" and {} other prompt{}", others, others > 1 ? "s" : "");
  return s;
}

// Why a between_steps gap's request sat out steps: preempted (the cache), or not scheduled.
std::string sat_out_text(const LateTokenRecord& w) {
  if (w.part != "between_steps" || !w.skipped_steps) return "";
  const int64_t pre = w.preemptions.value_or(0);
  return fmt::format(
      ": the request sat out {} steps between the two tokens; {}", *w.skipped_steps,
      pre > 0 ? fmt::format("it was preempted {} time{} in its life (the KV cache: the memory "
                            "verdict)",
                            pre, pre > 1 ? "s" : "")
              : std::string("it was never preempted, so it waited for a place in the step (the "
                            "token budget or the batch)"));
}

// The longest gap's own bubble (itl_attribution.worst), to end the ITL verdict with: the late
// token named, not only the tail's shares.
std::string worst_gap_text(const ItlAttributionRecord& a) {
  if (!a.worst || a.worst->empty()) return "";
  const LateTokenRecord& w = a.worst->front();
  return fmt::format(
      "; the longest gap, {:.2f} ms (request {}, token {}), ended at step {} with "
      "{} other tokens, and its largest part was {} (+{:.2f} ms{}{})",
      w.gap_s * 1e3, w.request, w.token, w.step, w.tokens - 1, w.part, w.part_s * 1e3,
      w.rank ? fmt::format(", rank {} late", *w.rank) : "", prompt_text(w) + sat_out_text(w));
}

// A uniform ITL whose longest gap is a fifth or more a late rank's (imbalance): every step
// carries it, so "the bandwidth limit, not a bug" would misname it.
constexpr double kLateRankShare = 0.2;
bool late_rank_in_every_step(const ItlAttributionRecord& a) {
  if (!a.worst || a.worst->empty()) return false;
  const LateTokenRecord& w = a.worst->front();
  return w.part == "imbalance" && w.gap_s > 0 && w.part_s >= kLateRankShare * w.gap_s;
}

// A uniform ITL: the decode step's bandwidth limit, unless a late rank is in every step.
Verdict uniform_itl(const LatencyStats& itl, double mbu, const ItlAttributionRecord& a) {
  if (late_rank_in_every_step(a)) {
    const LateTokenRecord& w = a.worst->front();
    return {3, "itl", "note",
            fmt::format("ITL p50 {:.1f} ms, p99 {:.1f} ms (p99 within 1.5x p50): uniform, but not "
                        "the decode step's bandwidth limit alone: {} makes {:.0f}% of even the "
                        "longest gap{}, so the steps wait on a late rank throughout (the balance "
                        "verdict names why)",
                        itl.p50 * 1e3, itl.p99 * 1e3, w.part, 100 * w.part_s / w.gap_s,
                        w.rank ? fmt::format(" (rank {})", *w.rank) : "")};
  }
  return {3, "itl", "note",
          fmt::format("ITL p50 {:.1f} ms, p99 {:.1f} ms (p99 within 1.5x p50): uniform; a "
                      "steadily slow ITL is the decode step's bandwidth limit, not a bug (MBU "
                      "{:.2f})",
                      itl.p50 * 1e3, itl.p99 * 1e3, mbu),
          "bandwidth_bound"};
}

// The cases of the ITL's shape verdict (itl_shape_verdict below).
void itl_shape_cases(const PointRecord& p, std::vector<Verdict>& v) {
  const MetricsRecord& m = *p.metrics;
  if (!m.itl_s || !(m.itl_s->n > 0)) return;
  const LatencyStats& itl = *m.itl_s;
  const bool spiky = itl.p99 > 1.5 * itl.p50;
  const ItlAttributionRecord a = m.itl_attribution.value_or(ItlAttributionRecord{});
  const double prefill_step_ratio = a.prefill_step_p50_s / a.decode_step_p50_s;
  // The spikes coincide with prefill: prefill rows make most of the tail's attributed time.
  const bool prefill_made_it = spiky && a.shares.prefill >= 0.5;
  const int64_t chunk = p.params.serve ? p.params.serve->chunk : 0;
  if (prefill_made_it && chunk > 0) {
    // Already chunked: each chunk still costs a decode step several times over, so the chunk is
    // too large for this device; a chunk step should cost at most 1.5x a decode step.
    const double per_token = (a.prefill_step_p50_s - a.decode_step_p50_s) / chunk;
    const double fits = per_token > 0 ? 0.5 * a.decode_step_p50_s / per_token : NAN;
    v.push_back(
        {3, "itl", "problem",
         fmt::format("ITL p50 {:.1f} ms, p99 {:.1f} ms with --chunk {}: a chunked step "
                     "still takes {:.1f}x a decode step (p50 {:.1f} vs {:.1f} ms) and makes "
                     "{:.0f}% of the p99 tail; the chunk is too large for this device: "
                     "about {:.0f} tokens would keep a chunked step within 1.5x",
                     itl.p50 * 1e3, itl.p99 * 1e3, chunk, prefill_step_ratio,
                     a.prefill_step_p50_s * 1e3, a.decode_step_p50_s * 1e3, 100 * a.shares.prefill,
                     fits),
         "chunk_too_large"});
    return;
  }
  if (prefill_made_it) {
    v.push_back(
        {3, "itl", "problem",
         fmt::format("ITL p50 {:.1f} ms, p99 {:.1f} ms: steady decode with spikes, and "
                     "steps with prefill take {:.1f}x a decode step (p50 {:.1f} vs {:.1f} "
                     "ms); prefill makes {:.0f}% of the p99 tail's excess: prefill "
                     "interference, so chunk prefills (--chunk)",
                     itl.p50 * 1e3, itl.p99 * 1e3, prefill_step_ratio, a.prefill_step_p50_s * 1e3,
                     a.decode_step_p50_s * 1e3, 100 * a.shares.prefill),
         "prefill_interference"});
    return;
  }
  if (!spiky) {
    v.push_back(uniform_itl(itl, m.mbu, a));
    return;
  }
  const double jitter = a.shares.jitter.value_or(NAN);
  std::string parts = fmt::format(
      "prefill {:.0f}%, imbalance {:.0f}%, host {:.0f}%, transfer {:.0f}%, decode "
      "bandwidth {:.0f}%",
      100 * a.shares.prefill, 100 * a.shares.imbalance, 100 * a.shares.host,
      100 * a.shares.transfer, 100 * a.shares.bandwidth);
  if (std::isfinite(jitter)) parts += fmt::format(", jitter {:.0f}%", 100 * jitter);
  if (jitter >= 0.5) {
    // Not a property of the model or the schedule: the same work took longer on every rank.
    v.push_back({3, "itl", "problem",
                 fmt::format("ITL p50 {:.1f} ms, p99 {:.1f} ms: a spiky tail made by jitter; "
                             "its excess is {}: the late steps' decode compute took longer than "
                             "their own work explains, on every rank at once, so the machine was "
                             "noisy (other tenants, a VM's vCPUs slowed, throttling); measure "
                             "again on a quiet machine before reading the tail",
                             itl.p50 * 1e3, itl.p99 * 1e3, parts),
                 "jitter"});
    return;
  }
  v.push_back({3, "itl", "note",
               fmt::format("ITL p50 {:.1f} ms, p99 {:.1f} ms: a spiky tail; its excess is {}",
                           itl.p50 * 1e3, itl.p99 * 1e3, parts)});
}

// 3. The ITL's shape: steady decode with spikes that coincide with prefill steps is prefill
// interference; uniformly slow is a bandwidth limit. Each case ends with the longest gap's part.
void itl_shape_verdict(const PointRecord& p, std::vector<Verdict>& v) {
  const std::size_t before = v.size();
  itl_shape_cases(p, v);
  if (v.size() > before)
    v.back().text += worst_gap_text(p.metrics->itl_attribution.value_or(ItlAttributionRecord{}));
}

// 4. The host gap against device time, over the steps.
// Host-bound above 10% of the step time, the threshold run's host verdict uses: the article's
// "device time per step comparable to the gap between steps". (25% let 5 ms of host work per
// step pass unnamed at the tiny model's full depth, 15.5% of a 30 ms step.)
constexpr double kHostBoundShare = 0.10;

void host_verdict(const PointRecord& p, std::vector<Verdict>& v) {
  const ServeRunRecord& s = *p.serve;
  const double share = s.busy_s > 0 ? s.host_gap_s / s.busy_s : NAN;
  const bool bound = share > kHostBoundShare;
  v.push_back({4, "host", bound ? "problem" : "ok",
               fmt::format("host gap {:.1f}% of the step time ({:.3f} of {:.3f} s with no device "
                           "work){}",
                           100 * share, s.host_gap_s, s.busy_s,
                           bound ? ": host-bound (over 10%); move host work off the step's path "
                                   "(async scheduling, sampling on device), or capture the step "
                                   "in a CUDA graph"
                                 : ""),
               bound ? std::optional<std::string>("host_bound") : std::nullopt});
}

}  // namespace

std::vector<Verdict> serve_verdicts(const PointRecord& p) {
  std::vector<Verdict> v;
  if (!p.serve || !p.metrics) return v;
  memory_verdict(p, v);
  ttft_verdict(p, v);
  itl_shape_verdict(p, v);
  host_verdict(p, v);
  return v;
}

}  // namespace tpb
