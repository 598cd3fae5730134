// Diagnosis in the order the source article teaches: (1) identify the regime, (2) batch and
// memory, (3) the ITL distribution, (4) host overhead, then TP balance, and (5) kernels last.
// Thresholds are stated in each message so a reader can disagree with them.
#include "harness/report/diagnose.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "harness/report/diagnose_link.h"
#include "harness/report/serve/diagnose_serve.h"

namespace tpb {

namespace {

// 1. Regime: bandwidth-bound decode is judged by MBU, compute-bound work by MFU.
void regime_verdicts(const PointRecord& p, std::vector<Verdict>& v) {
  const MetricsRecord& m = *p.metrics;
  // A serving step mixes decode and prefill rows; its mean intensity says which side it is on.
  const bool decode = p.params.phase == "decode" || p.params.phase == "serve";
  // Prefill's ceiling is the per-op one where the point has it: its ops sit on both sides of
  // the ridge, so the step's mean intensity overstates what the mix can reach.
  const double ceil = !decode && m.mfu_ceiling_ops ? *m.mfu_ceiling_ops : m.mfu_ceiling;
  const double mfu = m.mfu, mbu = m.mbu;
  const bool serve = p.params.phase == "serve";
  if (decode && m.intensity < m.ridge) {
    const bool near_ceiling = ceil > 0 && mfu >= 0.5 * ceil;
    v.push_back(
        {1, "regime", mbu >= 0.5 ? "ok" : "note",
         fmt::format(
             "{} bandwidth-bound (intensity {:.2f} FLOP/B vs ridge {:.1f}): MFU "
             "{:.4f} against a ceiling of {:.4f} is {}; judge it by MBU {:.2f} and "
             "{:.1f} tokens/s{}",
             serve ? "the serving steps (decode and prefill rows, their mean) are" : "decode is",
             m.intensity, m.ridge, mfu, ceil,
             near_ceiling ? "as good as this batch allows" : "below half its ceiling", mbu,
             m.tokens_per_s, mbu < 0.5 ? " (MBU under 0.5: bandwidth is being lost)" : "")});
  } else {
    v.push_back(
        {1, "regime", mfu >= 0.4 ? "ok" : "problem",
         fmt::format("{} compute-bound (intensity {:.0f} FLOP/B vs ridge {:.1f}, "
                     "ceiling {:.2f}): MFU {:.3f}{}",
                     serve    ? "the serving steps (decode and prefill rows, their mean) are"
                     : decode ? "decode at this batch is"
                              : "prefill is",
                     m.intensity, m.ridge, ceil, mfu,
                     mfu < 0.4 ? " is low for this regime: check kernels, sequence length and "
                                 "padding"
                               : "")});
  }
  const double occ = m.occupancy_sampled;
  v.push_back({1, "regime", occ - mbu > 0.5 ? "note" : "ok",
               fmt::format("occupancy {:.2f} vs MBU {:.2f} vs MFU {:.4f}: occupancy counts waiting "
                           "and small kernels as busy; it is not efficiency",
                           occ, mbu, mfu)});
}

// 3. ITL distribution (per-step time): spikes vs uniformly slow.
void itl_verdict(const StepTimeRecord& st, std::vector<Verdict>& v) {
  if (!(st.p50 > 0)) return;
  const bool spiky = st.p99 > 1.5 * st.p50;
  v.push_back(
      {3, "itl", spiky ? "problem" : "ok",
       fmt::format("step time p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms: {}", st.p50 * 1e3,
                   st.p99 * 1e3, st.max * 1e3,
                   spiky ? "steady steps with spikes (p99 > 1.5x p50): interference "
                           "(prefill, jitter, a noisy neighbour), not a bandwidth limit"
                         : "uniform; a slow but steady step is a bandwidth limit, not a bug")});
}

// 4. Host overhead. Where the idle falls says which fix applies: between steps it is host
// work outside the step (overlap it); inside a graph replay it is the device's own kernel
// boundaries, which a graph cannot remove (fewer, fused kernels can); eagerly it may be either.
std::string host_advice(const MetricsRecord& m) {
  if (!m.idle_split)
    return "host-side work is comparable to device work; batch it or capture "
           "the step in a graph";
  const IdleSplitRecord& s = *m.idle_split;
  if (s.between_steps_fraction > s.in_steps_fraction)
    return fmt::format(
        "{:.1f}% of wall falls between steps (host work: scheduling, sampling, "
        "synchronisation); overlap it with the device's next step",
        100 * s.between_steps_fraction);
  const std::string in =
      fmt::format("{:.1f}% of wall falls inside the steps", 100 * s.in_steps_fraction);
  if (s.in_steps_cause == "kernel_boundaries" && s.launches_fraction)
    return in + fmt::format(
                    ", {:.1f}% of wall at kernel boundaries with the next launch already queued "
                    "against {:.1f}% waiting for launches: a graph would remove only the second; "
                    "fewer, fused kernels remove the first",
                    100 * s.kernel_boundaries_fraction.value_or(0), 100 * *s.launches_fraction);
  if (s.in_steps_cause == "kernel_boundaries")
    return in +
           ", between kernels of a CUDA-graph replay: launches are not the cause, so a "
           "graph cannot remove it; fewer, fused kernels can";
  if (s.in_steps_cause == "launches")
    return in + fmt::format(
                    ", {:.1f}% of wall with the device waiting for the host to launch the next "
                    "kernel (against {:.1f}% at boundaries with it queued): capture the step in "
                    "a graph (--cuda-graph) to remove the launch time",
                    100 * s.launches_fraction.value_or(0),
                    100 * s.kernel_boundaries_fraction.value_or(0));
  if (s.in_steps_cause == "launches_or_kernel_boundaries")
    return in +
           ", between eagerly launched kernels: capture the step in a graph to remove the "
           "launch time, and compare with --cuda-graph: what stays is idle at kernel "
           "boundaries, which only fewer, fused kernels remove";
  if (s.in_steps_cause == "host_work")
    return in + ", the harness's host work between ops (the ops run on the host)";
  return in;
}

void host_verdict(const MetricsRecord& m, std::vector<Verdict>& v) {
  const double gap = m.host_gap_fraction;
  v.push_back({4, "host", gap > 0.1 ? "problem" : "ok",
               fmt::format("host gap {:.1f}% of wall (no device work in flight){}", 100 * gap,
                           gap > 0.1 ? ": " + host_advice(m) : "")});
}

// Who the group's waiting comes from, when it is not the rank that arrives last most often,
// and why that rank is late (straggler.cause).
std::string straggler_why(const StragglerRecord& s) {
  std::string out;
  const int64_t who = s.costliest_rank.value_or(s.rank.value_or(-1));
  if (s.costliest_share && who >= 0 && who != s.rank.value_or(-1))
    out += fmt::format(
        "; but rank {}'s late arrivals caused {:.0f}% of its group's wait (rank {}'s {:.0f}%): "
        "rank {} is where the waiting comes from",
        who, 100 * *s.costliest_share, s.rank.value_or(-1), 100 * s.caused_wait_share.value_or(0),
        who);
  else if (s.caused_wait_share && std::isfinite(*s.caused_wait_share))
    out += fmt::format(", causing {:.0f}% of its group's wait", 100 * *s.caused_wait_share);
  else if (s.caused_wait_share)  // null in results: the group never waited
    out += ", though its group never waited";
  if (!s.cause || s.cause->kind == "no_peers") return out;
  out += fmt::format("; rank {}: {}", s.cause->rank, s.cause->text);
  for (const std::string& e : s.cause->evidence) out += "; " + e;
  return out;
}

// The skew against its clock uncertainty: a skew p50 inside it may be clock error alone.
std::string skew_clock_text(const CollectivesRecord& c) {
  if (!c.skew_uncertainty_s) return "";
  const double u = *c.skew_uncertainty_s;
  return fmt::format(", p50 {:.1f} us {} the clock uncertainty ±{:.1f} us", c.skew_s.p50 * 1e6,
                     c.skew_s.p50 > u ? "beyond" : "within", u * 1e6);
}

// Who arrived last, or why no one is named (the leads lie within the clock uncertainty).
std::string arrival_text(const StragglerRecord& s, double excess, bool imbalanced,
                         double wait_s_total) {
  // A group that never waited has no straggler to name, whatever its clocks resolve.
  if (!s.rank)
    return "no rank is named a straggler: " + s.reason.value_or("no arrival order is known") +
           (wait_s_total > 0 ? "" : "; its group never waited");
  return fmt::format(
      "rank {} arrived last in {:.0f}% of them{} with {:+.1f}% compute vs the "
      "group median{}{}",
      *s.rank, 100 * s.arrived_last_share,
      s.lead_s ? fmt::format(" (median lead {:.1f} us)", *s.lead_s * 1e6) : "", 100 * excess,
      straggler_why(s),
      imbalanced && !s.cause ? ": a straggler; check its clocks, memory "
                               "pressure and placement before anything else"
                             : "");
}

// Balance across TP ranks: high occupancy with low throughput. With a cause on record, a rank
// is a straggler when its group waits and the cause finds extra time on it (host time
// included, which the compute excess misses); without one, when it also computes 5% more.
void balance_verdict(const PointRecord& p, std::vector<Verdict>& v) {
  if (!p.collectives || !(p.collectives->count > 0)) return;
  const CollectivesRecord& c = *p.collectives;
  const StragglerRecord s = p.straggler.value_or(StragglerRecord{});
  const double wait = c.wait_fraction, excess = s.excess_compute_fraction;
  // The rank that waits most: with one slow rank of two, the mean over ranks halves its wait.
  double worst = 0;
  for (const RankRecord& r : p.ranks.value_or(std::vector<RankRecord>{}))
    if (r.wall_s > 0) worst = std::max(worst, r.wait_s / r.wall_s);
  // A straggler is named only where the clocks resolve who arrived last (results' rank null).
  const bool found =
      s.rank &&
      (s.cause ? s.cause->kind != "no_excess" && s.cause->kind != "no_peers" : excess > 0.05);
  const bool imbalanced = worst > 0.1 && found;
  Verdict b{4, "balance", imbalanced ? "problem" : (wait > 0.1 ? "note" : "ok"),
            fmt::format("ranks wait {:.1f}% of wall in collectives (the most waiting rank "
                        "{:.1f}%; skew p95 {:.0f} us{}); {}",
                        100 * wait, 100 * worst, c.skew_s.p95 * 1e6, skew_clock_text(c),
                        arrival_text(s, excess, imbalanced, c.wait_s_total)),
            std::nullopt};
  if (imbalanced) b.code = "straggler";
  v.push_back(std::move(b));
}

// 5. Kernels last: the op that takes the most time, and its own bandwidth.
void kernels_verdict(const PointRecord& p, std::vector<Verdict>& v) {
  if (!p.ops) return;
  const OpRecord* top = nullptr;
  for (const auto& o : *p.ops)
    if (!o.op.starts_with("allreduce") && (!top || o.time_s_per_step > top->time_s_per_step))
      top = &o;
  if (top)
    v.push_back({5, "kernels", "note",
                 fmt::format("largest compute op: {} at {:.1f}% of the step, MBU {:.2f} on its "
                             "own bytes",
                             top->op, 100 * top->share_of_step, top->mbu.value_or(0.0))});
}

}  // namespace

std::vector<Verdict> diagnose_point(const PointRecord& p) {
  std::vector<Verdict> v;
  if (p.status != PointStatus::ok || !p.metrics) return v;
  regime_verdicts(p, v);
  if (p.params.phase == "serve") {
    const auto s = serve_verdicts(p);
    v.insert(v.end(), s.begin(), s.end());
  } else {
    itl_verdict(p.metrics->step_time_s, v);
    host_verdict(*p.metrics, v);
  }
  balance_verdict(p, v);
  link_verdicts(p, v);
  kernels_verdict(p, v);
  if (p.params.phase == "serve" &&
      std::none_of(v.begin(), v.end(), [](const Verdict& x) { return x.level == "problem"; }))
    v.push_back({0, "verdict", "ok", "no problem found at this load", "ok"});
  for (const auto& w : p.warnings.value_or(std::vector<std::string>{}))
    v.push_back({0, "measurement", "note", w});
  std::stable_sort(v.begin(), v.end(),
                   [](const Verdict& a, const Verdict& b) { return a.order < b.order; });
  return v;
}

std::vector<Verdict> diagnose_sweep(const std::vector<PointRecord>& points) {
  std::vector<Verdict> v;
  // 2. Batch and memory: the memory-exhaustion point caps the batch.
  for (const auto& p : points)
    if (p.status == PointStatus::oom) {
      v.push_back({2, "memory", "note",
                   fmt::format("batch {} does not fit ({}): memory, not compute, sets the largest "
                               "batch; shrink the KV cache (shorter context, fewer bytes per "
                               "element)",
                               p.params.batch, p.reason)});
      break;
    }
  // The knee: where adding batch stops adding tokens/s faster than it adds latency.
  std::vector<const PointRecord*> dec;
  for (const auto& p : points)
    if (p.status == PointStatus::ok && p.metrics && p.params.phase == "decode") dec.push_back(&p);
  std::sort(dec.begin(), dec.end(), [](const PointRecord* a, const PointRecord* b) {
    return a->params.batch < b->params.batch;
  });
  for (std::size_t i = 1; i < dec.size(); ++i) {
    const MetricsRecord &now = *dec[i]->metrics, &before = *dec[i - 1]->metrics;
    const double tput = now.tokens_per_s / before.tokens_per_s;
    const double lat = now.step_time_s.p95 / before.step_time_s.p95;
    if (lat > 1.0 && tput / lat < 1.2) {
      v.push_back(
          {2, "knee", "note",
           fmt::format("knee near batch {}: going to batch {} multiplies tokens/s by {:.2f} "
                       "but p95 step time by {:.2f}",
                       dec[i - 1]->params.batch, dec[i]->params.batch, tput, lat)});
      break;
    }
  }
  return v;
}

std::string format_verdicts(const std::vector<Verdict>& v, const char* line) {
  std::string out;
  for (const auto& x : v) out += fmt::format(fmt::runtime(line), x.order, x.level, x.topic, x.text);
  return out;
}

}  // namespace tpb
