// The gaps and their producing steps, the medians of each part, and the tail's excess.
#include "harness/analysis/itl_attribution.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "harness/analysis/stats.h"

namespace tpb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// prefill, imbalance, host, transfer, decode compute (split into bandwidth and jitter at the end)
using Parts = std::array<double, 5>;
constexpr std::size_t kDecode = 4;

Parts parts_of(const StepParts& s) {
  return {s.prefill_s, s.imbalance_s, s.host_s, s.transfer_s, s.decode_s};
}

// The gaps' median ratio of decode compute to its roofline time: what this run's decode costs per
// unit of work. NaN when no step knows its roofline time.
double median_decode_ratio(const std::vector<ItlGap>& g, const std::vector<StepParts>& steps) {
  std::vector<double> r;
  for (const ItlGap& x : g) {
    const StepParts& s = steps[static_cast<std::size_t>(x.step)];
    if (s.decode_roofline_s > 0) r.push_back(s.decode_s / s.decode_roofline_s);
  }
  return r.empty() ? kNaN : percentile(r, 50);
}

double median_duration(const std::vector<StepParts>& steps, bool with_prefill) {
  std::vector<double> d;
  for (const StepParts& s : steps)
    if (s.has_prefill == with_prefill) d.push_back(s.duration_s);
  return d.empty() ? kNaN : percentile(d, 50);
}

}  // namespace

namespace {

constexpr std::array<const char*, 6> kPartNames{"prefill",  "imbalance", "host",
                                                "transfer", "bandwidth", "jitter"};

// What a clean decode gap is measured against: the medians across all gaps of the parts every
// step has (transfer, decode compute), and the gaps' median ratio of decode compute to its
// roofline time.
struct Reference {
  Parts median{};
  double ratio = kNaN;
};

// One gap's excess in each of the six parts (prefill, imbalance, host, transfer, bandwidth,
// jitter): the first three in full (a clean decode step has none), transfer and decode compute
// over their medians (the transfer's to prefill by the prompt rows' share of tokens), decode
// compute's excess bandwidth as far as the step's decode work explains it and jitter beyond that.
std::array<double, 6> excess_of(const StepParts& s, const Reference& ref) {
  const Parts p = parts_of(s);
  std::array<double, 6> e{};
  for (std::size_t k = 0; k < kDecode; ++k) e[k] = std::max(0.0, p[k] - ref.median[k]);
  // The all-reduce payload is the step's tokens x hidden: the prompt rows made their share of
  // the transfer's excess over a clean decode step's.
  const double prompt = std::clamp(s.prompt_token_share, 0.0, 1.0);
  e[0] += prompt * e[3];
  e[3] -= prompt * e[3];
  // Without a roofline time the whole excess stays bandwidth, as the work cannot be judged.
  const double expected = std::isfinite(ref.ratio) && s.decode_roofline_s > 0
                              ? ref.ratio * s.decode_roofline_s
                              : s.decode_s;
  const double explained = std::max(expected, ref.median[kDecode]);
  e[kDecode] = std::max(0.0, std::min(s.decode_s, explained) - ref.median[kDecode]);
  e[kDecode + 1] = std::max(0.0, s.decode_s - explained);
  return e;
}

// The step's prompt rows, the most tokens first, the batch's order among equals.
std::vector<PrefillRow> largest_prompts(std::vector<PrefillRow> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const PrefillRow& a, const PrefillRow& b) { return a.tokens > b.tokens; });
  if (rows.size() > kPrefilledNamed) rows.resize(kPrefilledNamed);
  return rows;
}

// One gap named: its step's parts, the largest of them (or between_steps), and the step's
// prompts.
ItlAttribution::LateToken late_token(const ItlGap& x, int64_t tokens, const StepParts& s,
                                     const Reference& ref) {
  const std::array<double, 6> e = excess_of(s, ref);
  const auto top = static_cast<std::size_t>(std::max_element(e.begin(), e.end()) - e.begin());
  ItlAttribution::LateToken t;
  t.request = x.request, t.token = x.token, t.step = x.step, t.tokens = tokens;
  t.gap_s = x.gap_s;
  t.part = kPartNames[top], t.part_s = e[top], t.rank = top == 1 ? s.late_rank : -1;
  t.parts_s = {e[0], e[1], e[2], e[3], e[4], e[5]};
  t.between_steps_s = std::max(0.0, x.gap_s - s.duration_s);
  if (t.between_steps_s > e[top])
    t.part = "between_steps", t.part_s = t.between_steps_s, t.rank = -1;
  t.skipped_steps = x.prev_step >= 0 ? std::max<int64_t>(0, x.step - x.prev_step - 1) : -1;
  t.preemptions = x.preemptions;
  t.prefilled = largest_prompts(s.prefill_rows);
  t.prefill_requests = static_cast<int64_t>(s.prefill_rows.size());
  return t;
}

// The kWorstGaps longest gaps from distinct steps (a step's bubble delays every token it
// produces, so one slow step would otherwise fill the list), each with the number of gaps its
// step ended and named by its largest part; "between_steps" where the time before the producing
// step (the gap less that step's duration: the request sat out other steps, preempted or not
// scheduled) is larger than any part of the step.
std::vector<ItlAttribution::LateToken> worst_gaps(std::vector<ItlGap> g,
                                                  const std::vector<StepParts>& steps,
                                                  const Reference& ref) {
  std::stable_sort(g.begin(), g.end(),
                   [](const ItlGap& a, const ItlGap& b) { return a.gap_s > b.gap_s; });
  std::map<int64_t, int64_t> tokens;  // gaps ended per step
  for (const ItlGap& x : g) ++tokens[x.step];
  std::vector<ItlAttribution::LateToken> out;
  std::set<int64_t> named;
  for (const ItlGap& x : g) {
    if (out.size() == kWorstGaps) break;
    if (!named.insert(x.step).second) continue;
    out.push_back(late_token(x, tokens[x.step], steps[static_cast<std::size_t>(x.step)], ref));
  }
  return out;
}

}  // namespace

ItlAttribution attribute_itl(const std::vector<ItlGap>& all, const std::vector<StepParts>& steps) {
  ItlAttribution a;
  a.method =
      "gaps at or above the p99 ITL; each gap's producing step split into host gap, the "
      "straggler's extra busy time (max - lower median over ranks of compute plus the rank's own "
      "host time inside the step), collective transfer, and the "
      "rest of the compute divided between prefill and decode rows by their per-op roofline "
      "time; prefill, imbalance and host count in full, transfer and decode compute by their "
      "excess over their medians across all gaps, the transfer's excess in a step with prompt "
      "rows going to prefill by their share of the step's tokens (the all-reduce payload); decode "
      "compute's excess is bandwidth as far as "
      "the step's decode work explains it (its decode rows' roofline time at the gaps' median "
      "ratio of compute to roofline time) and jitter beyond that; worst: the 5 longest gaps "
      "from distinct steps, each named by its largest part in that split, with every part's "
      "excess and its step's prompt rows";
  a.decode_step_p50_s = median_duration(steps, false);
  a.prefill_step_p50_s = median_duration(steps, true);
  std::vector<ItlGap> g;
  for (const ItlGap& x : all)
    if (x.step >= 0 && static_cast<std::size_t>(x.step) < steps.size()) g.push_back(x);
  a.shares = {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  if (g.empty()) {
    a.threshold_s = kNaN;
    return a;
  }
  std::vector<double> values;
  std::array<std::vector<double>, 5> by_part;
  for (const ItlGap& x : g) {
    values.push_back(x.gap_s);
    const Parts p = parts_of(steps[static_cast<std::size_t>(x.step)]);
    for (std::size_t k = 0; k < p.size(); ++k) by_part[k].push_back(p[k]);
  }
  a.threshold_s = percentile(values, 99);
  // No reference for prefill, imbalance and host (a clean decode step has none of them).
  Reference ref;
  for (std::size_t k = 3; k < ref.median.size(); ++k) ref.median[k] = percentile(by_part[k], 50);
  ref.ratio = median_decode_ratio(g, steps);
  std::array<double, 6> excess{};
  for (const ItlGap& x : g) {
    if (x.gap_s < a.threshold_s) continue;
    ++a.samples;
    const std::array<double, 6> e = excess_of(steps[static_cast<std::size_t>(x.step)], ref);
    for (std::size_t k = 0; k < e.size(); ++k) excess[k] += e[k];
  }
  for (double e : excess) a.excess_s += e;
  if (a.excess_s > 0)
    a.shares = {excess[0] / a.excess_s, excess[1] / a.excess_s, excess[2] / a.excess_s,
                excess[3] / a.excess_s, excess[4] / a.excess_s, excess[5] / a.excess_s};
  a.worst = worst_gaps(g, steps, ref);
  return a;
}

}  // namespace tpb
