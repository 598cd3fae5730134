// Analysis of synced per-rank timelines: Scalasca wait states per all-reduce instance, busy /
// occupancy / host-gap fractions, step-time statistics, roofline figures and the straggler.
// Every definition is the one in docs/ARCHITECTURE.md "Metric definitions"; choices the contract
// leaves open (ties, partial sampling windows) are stated where they are made.
#include "harness/analysis/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

namespace tpb {
namespace {

using Interval = std::pair<double, double>;

// A collective record reduced to what matching needs. 24 bytes, so 1M of them sort quickly.
struct CollEntry {
  uint64_t key;  // (step, layer, op) packed; the instance identity across a TP group
  double enter, exit;
};

// Sort order of the packed key is (step, layer, op), which is execution order, so a rank's
// records usually arrive already sorted and the sort below is skipped.
uint64_t pack_key(int32_t step, int16_t layer, Op op) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(step)) << 24) |
         (static_cast<uint64_t>(static_cast<uint16_t>(layer)) << 8) | static_cast<uint64_t>(op);
}

// A ratio whose denominator is zero or not finite has no value: NaN, which the results write
// as null and the point's warnings name (a plausible 0 would read as a measurement).
double safe_div(double a, double b) {
  return b != 0 && std::isfinite(b) ? a / b : std::numeric_limits<double>::quiet_NaN();
}

// Clips to [lo, hi], drops empty pieces, sorts (unless sorted) and merges overlaps.
std::vector<Interval> merge_clipped(std::vector<Interval> iv, double lo, double hi) {
  std::size_t n = 0;
  for (const Interval& i : iv) {
    const double a = std::max(i.first, lo), b = std::min(i.second, hi);
    if (b > a) iv[n++] = {a, b};
  }
  iv.resize(n);
  if (!std::is_sorted(iv.begin(), iv.end())) std::sort(iv.begin(), iv.end());
  std::vector<Interval> out;
  for (const Interval& i : iv) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

// NVML utilization.gpu semantics: the share of sample windows in which any work was in
// flight. Windows of width w tile [lo, hi] from lo; a trailing partial window counts only if
// it is at least w/2 long (a sliver would otherwise swing the figure by a whole window);
// a wall shorter than w is one window equal to the wall. `merged` is sorted and disjoint, so
// window ranges are non-decreasing and occupied windows are counted without a bitmap.
double occupancy_sampled(const std::vector<Interval>& merged, double lo, double hi, double w) {
  const double wall = hi - lo;
  if (!(wall > 0) || merged.empty()) return 0;
  double width = w;
  int64_t nwin = 1;
  if (!(w > 0) || wall < w) {
    width = wall;
  } else {
    const auto full = static_cast<int64_t>(std::floor(wall / w));
    nwin = full + ((wall - static_cast<double>(full) * w) >= 0.5 * w ? 1 : 0);
  }
  int64_t occupied = 0, last = -1;
  for (const Interval& i : merged) {
    // Windows k0..k1 overlap the interval; those up to `last` were already counted.
    const auto first = static_cast<int64_t>(std::floor((i.first - lo) / width));
    const auto end = static_cast<int64_t>(std::ceil((i.second - lo) / width)) - 1;
    const int64_t k0 = std::max(first, last + 1);
    const int64_t k1 = std::min(std::max(end, first), nwin - 1);
    if (k0 > k1) continue;
    occupied += k1 - k0 + 1;
    last = k1;
  }
  return static_cast<double>(occupied) / static_cast<double>(nwin);
}

// One pass over a rank's records: everything per-rank that needs no other rank.
struct RankScan {
  std::vector<CollEntry> coll;                    // sorted by (key, enter)
  std::vector<std::pair<int32_t, double>> steps;  // (step, duration), sorted by step
};

// The launch call's return of the op that opens the busy interval starting at `t0`: the
// earliest-starting segment there (launches sorted by start), 0 where it carries none.
double launch_at(const std::vector<Interval>& launches, double t0) {
  const auto it = std::lower_bound(launches.begin(), launches.end(), Interval{t0, -1.0});
  return it != launches.end() && it->first == t0 ? it->second : 0.0;
}

// Splits the rank's idle (host_gap_fraction) into the part inside its steps, each step's span
// less the busy time within it, and the rest, outside every step; and each gap inside a step
// that ends at an op carrying its launch (`launches`: (start, launch returned), sorted) at
// that launch's return (RankMetrics::idle_launch_fraction). `merged` is sorted and disjoint;
// the steps of one rank do not overlap. A trace without step records has no inside.
void split_idle(const std::vector<Interval>& merged, std::vector<Interval> steps,
                const std::vector<Interval>& launches, RankMetrics& m) {
  std::sort(steps.begin(), steps.end());
  double idle_in = 0, launch = 0, boundary = 0;
  std::size_t j = 0;
  for (const Interval& st : steps) {
    double covered = 0, prev = st.first;
    while (j < merged.size() && merged[j].second <= st.first) ++j;
    for (std::size_t k = j; k < merged.size() && merged[k].first < st.second; ++k) {
      covered += std::min(st.second, merged[k].second) - std::max(st.first, merged[k].first);
      const double gap = merged[k].first - prev, returned = launch_at(launches, merged[k].first);
      if (gap > 0 && returned > 0) {
        const double waited = std::clamp(returned - prev, 0.0, gap);
        launch += waited;
        boundary += gap - waited;
      }
      prev = std::max(prev, merged[k].second);
    }
    idle_in += std::max(0.0, (st.second - st.first) - covered);
  }
  m.idle_in_steps_fraction = std::min(m.host_gap_fraction, idle_in / m.wall_s);
  m.idle_between_steps_fraction = std::max(0.0, m.host_gap_fraction - m.idle_in_steps_fraction);
  m.idle_launch_fraction = launch / m.wall_s;
  m.idle_boundary_fraction = boundary / m.wall_s;
}

RankScan scan_rank(const RankTrace& t, const AnalysisInput& in, RankMetrics& m) {
  RankScan s;
  std::vector<Interval> busy;  // compute + collective, measured only
  std::vector<Interval> step_spans;
  std::vector<Interval> launches;  // (start, launch returned) of segments that carry it
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  double busy_lo = lo, busy_hi = -lo;
  for (const SegmentRecord& r : t.segs) {
    if (r.step < 0) continue;  // warm-up
    if (r.op == Op::step) {
      s.steps.emplace_back(r.step, r.t1 - r.t0);
      step_spans.emplace_back(r.t0, r.t1);
      lo = std::min(lo, r.t0);
      hi = std::max(hi, r.t1);
      continue;
    }
    busy.emplace_back(r.t0, r.t1);
    if (r.launched > 0) launches.emplace_back(r.t0, r.launched);
    m.op_s[static_cast<std::size_t>(r.op)] += r.t1 - r.t0;
    busy_lo = std::min(busy_lo, r.t0);
    busy_hi = std::max(busy_hi, r.t1);
    if (r.collective) {
      m.collective_s += r.t1 - r.t0;
      s.coll.push_back({pack_key(r.step, r.layer, r.op), r.t0, r.t1});
    } else {
      m.compute_s += r.t1 - r.t0;
    }
  }
  // A trace without step records (a hand-made or partial one) falls back to its work span.
  if (s.steps.empty()) lo = busy_lo, hi = busy_hi;
  m.wall_s = hi > lo ? hi - lo : 0;
  m.measured_steps = static_cast<int>(s.steps.size());

  auto by_key = [](const CollEntry& a, const CollEntry& b) {
    return a.key != b.key ? a.key < b.key : a.enter < b.enter;
  };
  if (!std::is_sorted(s.coll.begin(), s.coll.end(), by_key))
    std::sort(s.coll.begin(), s.coll.end(), by_key);
  if (!std::is_sorted(s.steps.begin(), s.steps.end())) std::sort(s.steps.begin(), s.steps.end());

  if (m.wall_s > 0) {
    const std::vector<Interval> merged = merge_clipped(std::move(busy), lo, hi);
    double covered = 0;
    for (const Interval& i : merged) covered += i.second - i.first;
    m.busy_fraction = covered / m.wall_s;
    m.useful_fraction = m.compute_s / m.wall_s;
    m.host_gap_fraction = 1 - m.busy_fraction;
    std::sort(launches.begin(), launches.end());
    m.launch_records = static_cast<int>(launches.size());
    split_idle(merged, std::move(step_spans), launches, m);
    m.occupancy_sampled = occupancy_sampled(merged, lo, hi, in.occupancy_window_s);
  }
  std::vector<double> durs;
  durs.reserve(s.steps.size());
  double sum = 0;
  for (const auto& st : s.steps) durs.push_back(st.second), sum += st.second;
  m.step_time_mean_s = durs.empty() ? 0 : sum / static_cast<double>(durs.size());
  m.step_time_p50_s = percentile(std::move(durs), 50);
  return s;
}

// Two stamps of different ranks can be misplaced against each other by both ranks' clock
// uncertainty: the group's worst pair is its two least certain ranks.
double pair_uncertainty(const std::vector<int>& members, const AnalysisInput& in) {
  double u1 = 0, u2 = 0;  // largest, second largest
  for (int i : members) {
    const double u = in.ranks[i].clock_uncertainty_s;
    if (u > u1)
      u2 = u1, u1 = u;
    else if (u > u2)
      u2 = u;
  }
  return u1 + u2;
}

// Per input index: the lead of each resolved instance the rank entered last.
using Leads = std::vector<std::vector<double>>;

// Matches one TP group's all-reduce instances by key with a k-way merge over the ranks'
// key-sorted records: O(instances x ranks), no hashing. A key repeated on a rank (should not
// happen) is matched by occurrence order. An instance counts towards arrived_last and
// caused_wait only when the last enter leads the second last by more than `pair_u`: within
// it the order may be the clocks'.
void match_group(const std::vector<int>& members, std::vector<RankScan>& scans,
                 std::vector<RankMetrics>& ms, double uncertainty, double pair_u,
                 CollectiveSummary& cs, int& group_instances, Leads& leads) {
  const std::size_t k = members.size();
  std::vector<std::size_t> cur(k, 0);
  std::vector<char> in(k, 0);
  for (;;) {
    uint64_t key = std::numeric_limits<uint64_t>::max();
    bool any = false;
    for (std::size_t j = 0; j < k; ++j) {
      const auto& c = scans[members[j]].coll;
      if (cur[j] < c.size() && (!any || c[cur[j]].key < key)) key = c[cur[j]].key, any = true;
    }
    if (!any) break;
    double latest = -std::numeric_limits<double>::infinity(), first = -latest, second = latest;
    int last_j = -1, n = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const auto& c = scans[members[j]].coll;
      in[j] = cur[j] < c.size() && c[cur[j]].key == key;
      if (!in[j]) continue;
      const double e = c[cur[j]].enter;
      if (e > latest)
        second = latest, latest = e, last_j = static_cast<int>(j);
      else
        second = std::max(second, e);
      first = std::min(first, e);
      ++n;
    }
    double waited = 0;
    for (std::size_t j = 0; j < k; ++j) {
      if (!in[j]) continue;
      const CollEntry& c = scans[members[j]].coll[cur[j]++];
      RankMetrics& m = ms[members[j]];
      waited += wait_at_collective(c.enter, c.exit, latest);
      m.wait_s += wait_at_collective(c.enter, c.exit, latest);
      m.transfer_s += transfer_at_collective(c.enter, c.exit, latest);
      m.collectives += 1;
      if (c.exit < latest - uncertainty) m.clock_condition_violations += 1;
    }
    // A lone participant (TP=1) has no one to wait for, so it cannot "arrive last".
    if (n >= 2) {
      ++group_instances;
      // Clocks claimed exact (pair_u 0: hand-built or virtual traces) keep the documented
      // tie rule, the lowest group rank (`members` order and the strict > above).
      if (latest - second > pair_u || pair_u == 0) {
        ms[members[last_j]].arrived_last += 1;
        ms[members[last_j]].caused_wait_s += waited;
        leads[members[last_j]].push_back(latest - second);
      } else {
        cs.unresolved_arrivals += 1;
      }
    }
    cs.skew_s.push_back(latest - first);
    cs.count += 1;
  }
}

}  // namespace

double union_length(std::vector<std::pair<double, double>> iv, double lo, double hi) {
  double sum = 0;
  for (const Interval& i : merge_clipped(std::move(iv), lo, hi)) sum += i.second - i.first;
  return sum;
}

namespace {

using Groups = std::map<int, std::vector<int>>;  // group id -> input indices, ascending id

// A step lasts as long as its slowest rank: the group cannot start the next one sooner.
void append_group_step_times(const std::vector<int>& members, const std::vector<RankScan>& scans,
                             std::vector<double>& out) {
  std::vector<std::pair<int32_t, double>> all;
  for (int i : members) all.insert(all.end(), scans[i].steps.begin(), scans[i].steps.end());
  std::sort(all.begin(), all.end());
  for (std::size_t a = 0; a < all.size();) {
    double mx = all[a].second;
    std::size_t b = a + 1;
    for (; b < all.size() && all[b].first == all[a].first; ++b) mx = std::max(mx, all[b].second);
    out.push_back(mx);
    a = b;
  }
}

// Roofline: every rank holds one equal shard, so per-rank figures are the point's figures.
void roofline(const AnalysisInput& in, PointAnalysis& pa) {
  pa.flops = in.step_flops;
  pa.bytes = in.step_bytes;
  pa.intensity = safe_div(pa.flops, pa.bytes);
  pa.ridge = safe_div(in.peak_flops, in.peak_bw);
  pa.mfu_ceiling = pa.ridge > 0 ? std::min(1.0, pa.intensity / pa.ridge) : 0;
  const double t = in.basis == StepTimeBasis::mean ? pa.step_time.mean : pa.step_time.p50;
  pa.mbu = safe_div(pa.bytes, t * in.peak_bw);
  pa.mfu = safe_div(pa.flops, t * in.peak_flops);
  pa.roofline_fraction =
      safe_div(safe_div(pa.flops, t), std::min(in.peak_flops, pa.intensity * in.peak_bw));
}

// Per-rank MBU/MFU, then the point's figures as means over ranks and sums of wait/transfer.
void roll_up_ranks(const AnalysisInput& in, const std::vector<RankScan>& scans, PointAnalysis& pa) {
  const std::size_t nr = pa.ranks.size();
  double compute_per_step_sum = 0, wall_sum = 0;
  for (std::size_t i = 0; i < nr; ++i) {
    RankMetrics& m = pa.ranks[i];
    const double cps = safe_div(m.compute_s, static_cast<double>(scans[i].steps.size()));
    const double t = in.basis == StepTimeBasis::mean ? m.step_time_mean_s : m.step_time_p50_s;
    m.mbu = safe_div(pa.bytes, t * in.peak_bw);
    m.mfu = safe_div(pa.flops, t * in.peak_flops);
    m.mbu_compute = safe_div(pa.bytes, cps * in.peak_bw);
    m.mfu_compute = safe_div(pa.flops, cps * in.peak_flops);
    compute_per_step_sum += cps;
    pa.busy_fraction += m.busy_fraction;
    pa.useful_fraction += m.useful_fraction;
    pa.occupancy_sampled += m.occupancy_sampled;
    pa.host_gap_fraction += m.host_gap_fraction;
    pa.idle_in_steps_fraction += m.idle_in_steps_fraction;
    pa.idle_between_steps_fraction += m.idle_between_steps_fraction;
    pa.idle_launch_fraction += m.idle_launch_fraction;
    pa.idle_boundary_fraction += m.idle_boundary_fraction;
    pa.launch_records += m.launch_records;
    pa.collectives.wait_s_total += m.wait_s;
    pa.collectives.transfer_s_total += m.transfer_s;
    pa.clock_condition_violations += m.clock_condition_violations;
    wall_sum += m.wall_s;
  }
  if (nr > 0) {
    const double n = static_cast<double>(nr);
    const double cps = compute_per_step_sum / n;
    pa.mbu_compute = safe_div(pa.bytes, cps * in.peak_bw);
    pa.mfu_compute = safe_div(pa.flops, cps * in.peak_flops);
    pa.busy_fraction /= n;
    pa.useful_fraction /= n;
    pa.occupancy_sampled /= n;
    pa.host_gap_fraction /= n;
    pa.idle_in_steps_fraction /= n;
    pa.idle_between_steps_fraction /= n;
    pa.idle_launch_fraction /= n;
    pa.idle_boundary_fraction /= n;
  }
  pa.collectives.skew = summarize(pa.collectives.skew_s);
  pa.collectives.wait_fraction = safe_div(pa.collectives.wait_s_total, wall_sum);
}

// Each rank's caused wait as a share of its group's wait; the largest share names the rank
// where the group's waiting comes from (ties to the lowest world rank, as arrival's).
void costliest(const Groups& groups, PointAnalysis& pa) {
  std::map<int, double> group_wait;
  for (const auto& [g, members] : groups)
    for (int i : members) group_wait[g] += pa.ranks[i].wait_s;
  const auto share = [&](const RankMetrics& m) {
    return safe_div(m.caused_wait_s, group_wait[m.group]);
  };
  bool waited = false;
  for (const RankMetrics& m : pa.ranks) {
    const double sh = share(m);
    waited = waited || std::isfinite(sh);
    if (m.rank == pa.straggler.rank) pa.straggler.caused_wait_share = sh;
    if (sh > pa.straggler.costliest_share ||
        (sh == pa.straggler.costliest_share && sh > 0 && m.rank < pa.straggler.costliest_rank))
      pa.straggler.costliest_rank = m.rank, pa.straggler.costliest_share = sh;
  }
  if (pa.straggler.costliest_rank < 0) pa.straggler.costliest_rank = pa.straggler.rank;
  // No group waited: a share of no wait is undefined, as caused_wait_share's is (null).
  if (!waited) pa.straggler.costliest_share = std::numeric_limits<double>::quiet_NaN();
}

// Straggler: most (resolved) arrived_last, ties to the lowest world rank. Without any
// multi-rank instance (TP=1) arrival says nothing, so the rank with the most compute stands
// in. With multi-rank instances but none whose order the clocks resolve, no rank is named.
void find_straggler(const Groups& groups, const std::map<int, int>& group_instances,
                    const Leads& leads, PointAnalysis& pa) {
  const std::size_t nr = pa.ranks.size();
  int best = -1;
  bool by_arrival = false, multi = false;
  for (const RankMetrics& m : pa.ranks) by_arrival = by_arrival || m.arrived_last > 0;
  for (const auto& [g, n] : group_instances) multi = multi || n > 0;
  if (multi && !by_arrival) {
    pa.straggler.within_uncertainty = true;
    double most = -1;
    for (const RankMetrics& m : pa.ranks)
      if (m.compute_s > most) most = m.compute_s, pa.straggler.busiest_rank = m.rank;
    costliest(groups, pa);
    return;
  }
  for (std::size_t i = 0; i < nr; ++i) {
    const RankMetrics& m = pa.ranks[i];
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const RankMetrics& b = pa.ranks[best];
    const double mv = by_arrival ? m.arrived_last : m.compute_s;
    const double bv = by_arrival ? b.arrived_last : b.compute_s;
    if (mv > bv || (mv == bv && m.rank < b.rank)) best = static_cast<int>(i);
  }
  if (best < 0) return;
  const RankMetrics& s = pa.ranks[best];
  pa.straggler.rank = s.rank;
  if (by_arrival) {
    pa.straggler.arrived_last_share = safe_div(s.arrived_last, group_instances.at(s.group));
    pa.straggler.lead_s = lower_median(leads[best]);
  }
  std::vector<double> compute;
  for (int i : groups.at(s.group)) compute.push_back(pa.ranks[i].compute_s);
  const double med = lower_median(std::move(compute));
  pa.straggler.excess_compute_fraction = med > 0 ? s.compute_s / med - 1 : 0;
  costliest(groups, pa);
}

}  // namespace

PointAnalysis analyze(const AnalysisInput& in) {
  PointAnalysis pa;
  const std::size_t nr = in.ranks.size();
  pa.ranks.resize(nr);
  std::vector<RankScan> scans(nr);
  Groups groups;
  for (std::size_t i = 0; i < nr; ++i) {
    const RankTrace& t = in.ranks[i];
    RankMetrics& m = pa.ranks[i];
    m.rank = t.rank, m.group = t.group, m.group_rank = t.group_rank;
    scans[i] = scan_rank(t, in, m);
    groups[t.group].push_back(static_cast<int>(i));
  }

  std::map<int, int> group_instances;  // instances with >= 2 participants, per group
  Leads leads(nr);
  for (auto& [g, members] : groups) {
    std::sort(members.begin(), members.end(), [&](int a, int b) {
      const RankMetrics &x = pa.ranks[a], &y = pa.ranks[b];
      return x.group_rank != y.group_rank ? x.group_rank < y.group_rank : x.rank < y.rank;
    });
    const double pair_u = pair_uncertainty(members, in);
    pa.collectives.skew_uncertainty_s = std::max(pa.collectives.skew_uncertainty_s, pair_u);
    match_group(members, scans, pa.ranks, in.clock_uncertainty_s, pair_u, pa.collectives,
                group_instances[g], leads);
    append_group_step_times(members, scans, pa.step_time_s);
  }
  pa.step_time = summarize(pa.step_time_s);
  pa.tokens_per_s =
      safe_div(static_cast<double>(groups.size()) * in.tokens_per_step, pa.step_time.mean);
  roofline(in, pa);
  roll_up_ranks(in, scans, pa);
  find_straggler(groups, group_instances, leads, pa);
  return pa;
}

}  // namespace tpb
