// Phases from segments, the virtual clock that runs them, and the three edits.
#include "harness/analysis/replay.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "harness/analysis/stats.h"
#include "harness/analysis/step_breakdown.h"

namespace tpb {

namespace {

using Instance = CollectiveInstance;

// One step of one rank: its bounds and its segments in time order.
ReplayStep phases_of(const SegmentRecord& bounds, std::vector<SegmentRecord> segs,
                     const std::map<Instance, double>& latest) {
  std::sort(segs.begin(), segs.end(),
            [](const SegmentRecord& a, const SegmentRecord& b) { return a.t0 < b.t0; });
  ReplayStep st;
  st.step = bounds.step;
  st.phases.emplace_back();
  double cursor = bounds.t0;
  std::map<std::pair<int, int>, int> seen;  // (layer, op) -> occurrences in this phase
  for (const SegmentRecord& s : segs) {
    ReplayPhase& ph = st.phases.back();
    ph.host_s += std::max(0.0, s.t0 - cursor);
    cursor = std::max(cursor, s.t1);
    if (s.collective) {
      const double l = latest.at({s.step, s.layer, static_cast<int>(s.op)});
      ph.transfer_s = transfer_at_collective(s.t0, s.t1, l);
      st.phases.emplace_back();
      seen.clear();
      continue;
    }
    const int n = seen[{s.layer, static_cast<int>(s.op)}]++;
    ph.compute_s += s.t1 - s.t0;
    ph.ops[{s.layer, static_cast<int>(s.op), n, 0}] += s.t1 - s.t0;
  }
  st.phases.back().host_s += std::max(0.0, bounds.t1 - cursor);
  return st;
}

std::vector<ReplayStep> rank_steps(const RankTrace& r, const std::map<Instance, double>& latest,
                                   double& start) {
  std::map<int, SegmentRecord> bounds;
  std::map<int, std::vector<SegmentRecord>> segs;
  for (const SegmentRecord& s : r.segs) {
    if (s.step < 0) continue;
    if (s.op == Op::step)
      bounds[s.step] = s;
    else
      segs[s.step].push_back(s);
  }
  std::vector<ReplayStep> out;
  double prev_end = 0;
  for (const auto& [k, b] : bounds) {
    out.push_back(phases_of(b, segs[k], latest));
    if (out.size() == 1)
      start = b.t0;
    else
      out.back().lead_s = std::max(0.0, b.t0 - prev_end);
    prev_end = b.t1;
  }
  if (out.empty())
    throw std::invalid_argument("rank " + std::to_string(r.rank) + " has no measured step");
  return out;
}

void check_lined_up(const ReplayGroup& g) {
  for (std::size_t r = 1; r < g.steps.size(); ++r) {
    if (g.steps[r].size() != g.steps[0].size())
      throw std::invalid_argument("the ranks recorded different numbers of steps");
    for (std::size_t k = 0; k < g.steps[r].size(); ++k)
      if (g.steps[r][k].step != g.steps[0][k].step ||
          g.steps[r][k].phases.size() != g.steps[0][k].phases.size())
        throw std::invalid_argument("step " + std::to_string(g.steps[0][k].step) +
                                    ": the ranks' collectives do not line up");
  }
}

}  // namespace

ReplayGroup replay_group(const std::vector<RankTrace>& group) {
  if (group.empty()) throw std::invalid_argument("no ranks to replay");
  const auto latest = latest_enters(group);
  ReplayGroup g;
  g.start_s.resize(group.size());
  for (std::size_t r = 0; r < group.size(); ++r)
    g.steps.push_back(rank_steps(group[r], latest, g.start_s[r]));
  check_lined_up(g);
  return g;
}

std::vector<double> replay_step_times(const ReplayGroup& g) {
  const std::size_t ranks = g.steps.size();
  std::vector<double> t = g.start_s, begin(ranks), out;
  for (std::size_t k = 0; ranks > 0 && k < g.steps[0].size(); ++k) {
    for (std::size_t r = 0; r < ranks; ++r) begin[r] = t[r] += g.steps[r][k].lead_s;
    const std::size_t phases = g.steps[0][k].phases.size();
    for (std::size_t j = 0; j < phases; ++j) {
      double latest = -1e300;
      for (std::size_t r = 0; r < ranks; ++r) {
        const ReplayPhase& ph = g.steps[r][k].phases[j];
        t[r] += ph.host_s + ph.compute_s;
        latest = std::max(latest, t[r]);
      }
      if (j + 1 == phases) break;  // the tail: no collective after it
      for (std::size_t r = 0; r < ranks; ++r) t[r] = latest + g.steps[r][k].phases[j].transfer_s;
    }
    double longest = 0;
    for (std::size_t r = 0; r < ranks; ++r) longest = std::max(longest, t[r] - begin[r]);
    out.push_back(longest);
  }
  return out;
}

std::vector<double> measured_step_times(const std::vector<RankTrace>& group) {
  std::map<int, double> longest;
  for (const RankTrace& r : group)
    for (const SegmentRecord& s : r.segs)
      if (s.step >= 0 && s.op == Op::step) longest[s.step] = std::max(longest[s.step], s.t1 - s.t0);
  std::vector<double> out;
  for (const auto& [k, v] : longest) out.push_back(v);
  return out;
}

namespace {

// Each rank's total of `part` over the replayed steps, and the group's lower median of them.
template <class Part>
std::pair<std::vector<double>, double> totals(const ReplayGroup& g, Part part) {
  std::vector<double> total(g.steps.size(), 0.0);
  for (std::size_t r = 0; r < g.steps.size(); ++r)
    for (const ReplayStep& st : g.steps[r]) total[r] += part(st);
  return {total, total.empty() ? 0 : lower_median(total)};
}

}  // namespace

ReplayGroup without_straggler(ReplayGroup g) {
  // Each rank's compute over the replayed steps against the group's lower median of them (the
  // point's straggler.excess_compute_fraction), and likewise its host time inside its steps
  // and between them, each part apart (straggler.cause's outside_ops); a rank above a median
  // has that part of every step scaled down by its excess, so its step-to-step noise, and the
  // skew the other ranks have, stay.
  const auto [compute, cmed] = totals(g, [](const ReplayStep& st) {
    double s = 0;
    for (const ReplayPhase& ph : st.phases) s += ph.compute_s;
    return s;
  });
  const auto [inside, imed] = totals(g, [](const ReplayStep& st) {
    double s = 0;
    for (const ReplayPhase& ph : st.phases) s += ph.host_s;
    return s;
  });
  const auto [lead, lmed] = totals(g, [](const ReplayStep& st) { return st.lead_s; });
  const auto down = [](double total, double median) {
    return total > median && total > 0 ? median / total : 1.0;
  };
  for (std::size_t r = 0; r < g.steps.size(); ++r) {
    const double cs = down(compute[r], cmed), is = down(inside[r], imed), ls = down(lead[r], lmed);
    for (ReplayStep& st : g.steps[r]) {
      st.lead_s *= ls;
      for (ReplayPhase& ph : st.phases) {
        ph.host_s *= is;
        ph.compute_s *= cs;
        for (auto& [key, sec] : ph.ops) sec *= cs;
      }
    }
  }
  return g;
}

ReplayGroup without_host_gap(ReplayGroup g) {
  for (auto& rank : g.steps)
    for (ReplayStep& st : rank) {
      st.lead_s = 0;
      for (ReplayPhase& ph : st.phases) ph.host_s = 0;
    }
  return g;
}

ReplayGroup with_fewer_kernels(ReplayGroup g, const std::map<int, double>& floor_s) {
  for (auto& rank : g.steps)
    for (ReplayStep& st : rank)
      for (ReplayPhase& ph : st.phases) {
        ph.host_s = 0;
        for (auto& [key, s] : ph.ops) {
          const auto f = floor_s.find(std::get<1>(key));
          if (f == floor_s.end() || s <= f->second) continue;
          ph.compute_s -= s - f->second;
          s = f->second;
        }
      }
  return g;
}

ReplayGroup with_transfer(ReplayGroup g, double transfer_s) {
  for (auto& rank : g.steps)
    for (ReplayStep& st : rank)
      for (std::size_t j = 0; j + 1 < st.phases.size(); ++j) st.phases[j].transfer_s = transfer_s;
  return g;
}

ReplayGroup without_jitter(ReplayGroup g) {
  for (auto& rank : g.steps) {
    // Per phase index: every op's seconds in every step (0 where a step lacks it), and the
    // collective's transfer.
    std::map<std::size_t, std::map<PhaseOpKey, std::vector<double>>> ops;
    std::map<std::size_t, std::vector<double>> transfer;
    for (std::size_t k = 0; k < rank.size(); ++k)
      for (std::size_t j = 0; j < rank[k].phases.size(); ++j) {
        transfer[j].push_back(rank[k].phases[j].transfer_s);
        for (const auto& [key, s] : rank[k].phases[j].ops) {
          auto& v = ops[j][key];
          v.resize(k, 0.0);
          v.push_back(s);
        }
      }
    for (ReplayStep& st : rank)
      for (std::size_t j = 0; j < st.phases.size(); ++j) {
        double sum = 0;
        for (auto& [key, v] : ops[j]) {
          v.resize(rank.size(), 0.0);
          sum += percentile(v, 50);
        }
        st.phases[j].compute_s = sum;
        st.phases[j].transfer_s = percentile(transfer[j], 50);
      }
  }
  return g;
}

}  // namespace tpb
