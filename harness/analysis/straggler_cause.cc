// The straggler's extra time per step, op by op, against the lower median of its TP group (the
// reference of excess_compute_fraction), then classified by where it falls. The thresholds are
// named below; each is a judgement of what is clearly more than the other, not a fitted value.
#include "harness/analysis/straggler_cause.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "harness/analysis/stats.h"

namespace tpb {

namespace {

// Extra time below this share of the group's busy time per step is the order of noise.
constexpr double kNoiseShare = 0.03;
// A side of the ridge is judged when it holds at least this share of the model ops' time.
constexpr double kSideShare = 0.10;
// One side is named when its slowdown is at least this many times the other side's.
constexpr double kSideDominance = 3.0;
constexpr double kSideMin = 0.05;  // and at least this slowdown (x1.05)
// One op is named when it carries this share of the extra time on the model's ops, and this
// many times its share of their time (a rank slower as a whole spreads its extra time in
// proportion to each op's time).
constexpr double kOneOpExcess = 0.5, kOneOpOverTime = 2.0;
// Counters that differ by less are not evidence.
constexpr double kDescheduledDelta = 0.05, kClockRatio = 0.97;

bool is_compute(Op op) {
  return !op_is_collective(op) && op != Op::step;
}
bool is_model_op(Op op) {
  return is_compute(op) && op != Op::compute && op != Op::injected;
}

struct Against {
  std::array<double, kOpCount> mine{}, median{};
  double outside_mine = 0, outside_median = 0;
  std::vector<const CauseRank*> group;
};

Against against_group(const CauseInput& in, const CauseRank& s) {
  Against a;
  for (const CauseRank& r : in.ranks)
    if (r.group == s.group) a.group.push_back(&r);
  for (std::size_t o = 0; o < kOpCount; ++o) {
    std::vector<double> v;
    for (const CauseRank* r : a.group) v.push_back(r->op_s_per_step[o]);
    a.mine[o] = s.op_s_per_step[o];
    a.median[o] = lower_median(std::move(v));
  }
  std::vector<double> v;
  for (const CauseRank* r : a.group) v.push_back(r->outside_ops_s_per_step);
  a.outside_mine = s.outside_ops_s_per_step;
  a.outside_median = lower_median(std::move(v));
  return a;
}

// The straggler's time over the group's on the priced model ops on one side of the ridge;
// null where that side holds under kSideShare of their time.
std::optional<double> side_ratio(const CauseInput& in, const Against& a, bool above) {
  double mine = 0, median = 0, all = 0;
  for (std::size_t o = 0; o < kOpCount; ++o) {
    if (!is_model_op(static_cast<Op>(o)) || !in.priced[o]) continue;
    all += a.median[o];
    if ((in.ridge > 0 && in.intensity[o] >= in.ridge) != above) continue;
    mine += a.mine[o];
    median += a.median[o];
  }
  if (all <= 0 || median < kSideShare * all) return std::nullopt;
  return mine / median;
}

std::string ratio_text(const std::optional<double>& r) {
  return r ? fmt::format("x{:.2f}", *r) : "none";
}

// The verdict on the two sides of the ridge, once no single op stands out.
void classify_sides(StragglerCause& c) {
  const double dm = c.memory_bound_ratio.value_or(1) - 1, df = c.flop_bound_ratio.value_or(1) - 1;
  const bool both = c.memory_bound_ratio && c.flop_bound_ratio;
  if (both && dm >= kSideMin && dm >= kSideDominance * std::max(df, 0.0)) {
    c.kind = "memory_bound_ops";
    c.text = fmt::format(
        "its extra time is on the memory-bound ops: {} below the ridge against {} above it, so "
        "memory bandwidth (a contending process, a slower memory path), not the clock",
        ratio_text(c.memory_bound_ratio), ratio_text(c.flop_bound_ratio));
  } else if (both && df >= kSideMin && df >= kSideDominance * std::max(dm, 0.0)) {
    c.kind = "flop_bound_ops";
    c.text = fmt::format(
        "its extra time is on the FLOP-bound ops: {} above the ridge against {} below it, so the "
        "compute clock (throttling, a locked or lower SM clock), not memory",
        ratio_text(c.flop_bound_ratio), ratio_text(c.memory_bound_ratio));
  } else {
    c.kind = "every_op";
    c.text = fmt::format(
        "its extra time is on every op alike ({} on the memory-bound ops, {} on the FLOP-bound "
        "ones{}): it runs slower as a whole (time-slicing, its clock, a slower device)",
        ratio_text(c.memory_bound_ratio), ratio_text(c.flop_bound_ratio),
        both ? ""
             : "; one side of the ridge holds under 10% of the op time here, so memory and "
               "clock are not told apart at this point");
  }
}

// The model ops' verdict: one op, one side of the ridge, or every op alike.
void classify_model_ops(const CauseInput& in, const Against& a, StragglerCause& c) {
  double excess = 0, time = 0;
  std::size_t top = kOpCount;
  for (std::size_t o = 0; o < kOpCount; ++o) {
    if (!is_model_op(static_cast<Op>(o))) continue;
    excess += a.mine[o] - a.median[o];
    time += a.median[o];
    if (top == kOpCount || a.mine[o] - a.median[o] > a.mine[top] - a.median[top]) top = o;
  }
  c.memory_bound_ratio = side_ratio(in, a, false);
  c.flop_bound_ratio = side_ratio(in, a, true);
  if (time <= 0 || excess <= 0) {
    c.kind = "compute_unsplit";
    c.text = time <= 0 ? "its extra time is inside its compute, which this point stamps whole "
                         "between collectives "
                         "(no per-op times to split it by)"
                       : "its extra time is in compute outside the model's stamped ops";
    return;
  }
  c.top_op = op_name(static_cast<Op>(top));
  c.top_op_share = (a.mine[top] - a.median[top]) / excess;
  const double time_share = a.median[top] / time;
  if (c.top_op_share >= kOneOpExcess && c.top_op_share >= kOneOpOverTime * time_share) {
    c.kind = "one_op";
    c.text = fmt::format(
        "its extra time is in one op: {} carries {:.0f}% of it on the model's ops while it is "
        "{:.0f}% of their time (x{:.2f} on it): look at what that op alone touches",
        *c.top_op, 100 * c.top_op_share, 100 * time_share,
        a.median[top] > 0 ? a.mine[top] / a.median[top] : 0.0);
    return;
  }
  classify_sides(c);
}

// The rank's own counters against the median of its peers' (the group without it): what
// backs the op split up.
std::vector<std::string> evidence(const Against& a, const CauseRank& s) {
  std::vector<std::string> out;
  std::vector<double> desched, clock;
  std::map<std::string, int> devices;
  for (const CauseRank* r : a.group) {
    ++devices[r->device];
    if (r == &s) continue;
    if (r->descheduled_fraction) desched.push_back(*r->descheduled_fraction);
    if (r->sm_clock_mhz) clock.push_back(*r->sm_clock_mhz);
  }
  const std::size_t peers = a.group.size() - 1;
  if (s.descheduled_fraction && desched.size() == peers) {
    const double med = percentile(desched, 50);
    if (*s.descheduled_fraction - med >= kDescheduledDelta)
      out.push_back(fmt::format(
          "off its core {:.0f}% of the measured time against {:.0f}% for its peers: another "
          "thread or process shares its core (time-slicing)",
          100 * *s.descheduled_fraction, 100 * med));
  }
  if (s.sm_clock_mhz && clock.size() == peers) {
    const double med = percentile(clock, 50);
    std::string why;
    for (const std::string& t : s.throttle_reasons) why += (why.empty() ? "" : ", ") + t;
    if (*s.sm_clock_mhz < kClockRatio * med)
      out.push_back(fmt::format("SM clock {:.0f} MHz against {:.0f} MHz for its peers{}",
                                *s.sm_clock_mhz, med,
                                why.empty() ? "" : " (throttled: " + why + ")"));
  }
  if (devices.size() > 1)
    out.push_back(fmt::format("a different device in the group: {} on this rank", s.device));
  return out;
}

}  // namespace

StragglerCause straggler_cause(const CauseInput& in) {
  StragglerCause c;
  const CauseRank* s = nullptr;
  for (const CauseRank& r : in.ranks)
    if (r.rank == in.straggler) s = &r;
  const Against a = s ? against_group(in, *s) : Against{};
  if (!s || a.group.size() < 2) {
    c.kind = "no_peers";
    c.text = "its TP group has no other rank to compare it with";
    return c;
  }
  double busy = a.outside_median;
  for (std::size_t o = 0; o < kOpCount; ++o) {
    if (!is_compute(static_cast<Op>(o))) continue;
    c.compute_excess_s += a.mine[o] - a.median[o];
    busy += a.median[o];
  }
  const double injected = a.mine[static_cast<std::size_t>(Op::injected)] -
                          a.median[static_cast<std::size_t>(Op::injected)];
  c.outside_ops_excess_s = a.outside_mine - a.outside_median;
  c.evidence = evidence(a, *s);
  const double late = std::max(c.compute_excess_s, 0.0) + std::max(c.outside_ops_excess_s, 0.0);
  if (late < kNoiseShare * busy) {
    c.kind = "no_excess";
    c.text = fmt::format(
        "it has no more time per step than its group ({:+.1f}% of the group's busy time): it "
        "arrives last by the order of noise, not by a cause",
        busy > 0 ? 100 * late / busy : 0.0);
  } else if (c.outside_ops_excess_s > c.compute_excess_s) {
    c.kind = "outside_ops";
    c.text = fmt::format(
        "its extra time is outside its ops: {:.3g} ms more per step with nothing in flight (host "
        "work, launches, scheduling) than the group's {:.3g} ms, against {:+.3g} ms inside them",
        1e3 * c.outside_ops_excess_s, 1e3 * a.outside_median, 1e3 * c.compute_excess_s);
  } else if (injected >= 0.5 * c.compute_excess_s) {
    c.kind = "injected_work";
    c.text = fmt::format(
        "its extra time is in work that is not the model's: {:.3g} of its {:.3g} ms extra compute "
        "per step are injected segments (--inject slowdown or jitter)",
        1e3 * injected, 1e3 * c.compute_excess_s);
  } else {
    classify_model_ops(in, a, c);
  }
  return c;
}

}  // namespace tpb
