// The link verdict: a TP group whose ranks sit on several hosts runs its collectives over the
// links between them. A slow link shows as transfer (the time after the last rank arrived,
// which every rank pays alike), not as one rank's extra compute and the others' wait, so it is
// told apart from a straggler by the Scalasca split, not by who arrived last.
#pragma once
#include <vector>

#include "harness/record/point_record.h"
#include "harness/record/verdict.h"

namespace tpb {

// Thresholds, stated in the verdict's text: transfer at least this share of the group's wall,
// and larger than the group's wait (both summed over its ranks against their summed wall): the
// collective's own time, more than waiting for a late rank, is what the group pays for. A
// straggler and a slow link can both be named for one point.
inline constexpr double kSlowLinkTransferShare = 0.15;

// Appends one verdict per TP group that spans hosts (code slow_link when the link sets the
// pace); nothing for a point whose groups each sit on one host.
void link_verdicts(const PointRecord& p, std::vector<Verdict>& v);

}  // namespace tpb
