// Per TP group across hosts: transfer against wait, and the rate the all-reduce got.
#include "harness/report/diagnose_link.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace tpb {

namespace {

struct GroupSplit {
  double transfer_share = 0, wait_share = 0, transfer_s_per_rank = 0;
  int64_t ranks = 0;
};

GroupSplit group_split(const PointRecord& p, int64_t group) {
  GroupSplit g;
  double transfer = 0, wait = 0, wall = 0;
  for (const RankRecord& r : *p.ranks) {
    if (r.group != group || !(r.wall_s > 0)) continue;
    ++g.ranks;
    transfer += r.transfer_s;
    wait += r.wait_s;
    wall += r.wall_s;
  }
  if (wall > 0) g.transfer_share = transfer / wall;
  if (wall > 0) g.wait_share = wait / wall;
  if (g.ranks > 0) g.transfer_s_per_rank = transfer / static_cast<double>(g.ranks);
  return g;
}

// The all-reduce's rate during its transfer, per rank: message bytes per step over transfer
// time per step. A fixed-batch step's messages are the same every step; a serving step's
// vary with the batch, so there it is not given.
std::string rate_text(const PointRecord& p, const GroupSplit& g) {
  if (p.params.phase == "serve" || !p.cost || !(p.params.steps > 0) || !(g.transfer_s_per_rank > 0))
    return "";
  const double per_step = g.transfer_s_per_rank / static_cast<double>(p.params.steps);
  const double bytes = p.cost->comm_bytes;
  return fmt::format(
      "; {:.0f} KB of all-reduce per step in {:.0f} us of transfer, {:.1f} MB/s "
      "per rank (algorithm bandwidth)",
      bytes / 1e3, per_step * 1e6, bytes / per_step / 1e6);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

void link_verdicts(const PointRecord& p, std::vector<Verdict>& v) {
  if (!p.tp_placement || !p.tp_placement->crosses_hosts || !p.ranks) return;
  for (const TpGroupHostsRecord& grp : p.tp_placement->groups) {
    if (grp.hosts.size() < 2) continue;
    const GroupSplit g = group_split(p, grp.group);
    const bool slow = g.transfer_share >= kSlowLinkTransferShare && g.transfer_share > g.wait_share;
    const std::string hosts = joined(grp.hosts);
    Verdict x{
        4, "link", slow ? "problem" : "ok",
        fmt::format("TP group {} spans hosts {}: transfer {:.1f}% of wall against wait "
                    "{:.1f}%{}{}",
                    grp.group, hosts, 100 * g.transfer_share, 100 * g.wait_share, rate_text(p, g),
                    slow ? fmt::format(": the link between {} sets the pace (transfer "
                                       ">= {:.0f}% and above the wait for late ranks); "
                                       "check its rate and delay, or keep the TP group "
                                       "inside one host",
                                       hosts, 100 * kSlowLinkTransferShare)
                         : ": the link keeps up"),
        std::nullopt};
    if (slow) x.code = "slow_link";
    v.push_back(std::move(x));
  }
}

}  // namespace tpb
