// Builds a `tpbench collectives` point's record on rank 0 from every rank's CollRankResult for
// one size, and the run's summary from its points. No I/O: printers and the results writer
// take the records from here.
#pragma once
#include <string>
#include <vector>

#include "harness/config/collectives_spec.h"
#include "harness/record/coll_point_record.h"
#include "harness/record/collective_rank_result.h"

namespace tpb {

// `ranks` and `hosts` are indexed by world rank.
CollPointRecord coll_point(const CollectivesSpec& s, const CollCounts& c,
                           const std::vector<CollRankResult>& ranks,
                           const std::vector<std::string>& hosts);

CollSummaryRecord coll_summary(const std::vector<CollPointRecord>& points);

}  // namespace tpb
