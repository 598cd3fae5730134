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

// One message size as nccl-tests prints it: its out-of-place and in-place points (either may
// be absent: a path that cannot place apart runs in-place only).
struct CollSizeRow {
  const CollPointRecord* out_of_place = nullptr;
  const CollPointRecord* in_place = nullptr;
  const CollPointRecord& any() const { return in_place ? *in_place : *out_of_place; }
};

// Consecutive points of the same size pair up, in the order the verb measured them; a modelled
// point fills both halves.
std::vector<CollSizeRow> coll_size_rows(const std::vector<CollPointRecord>& points);

// nccl-tests' `redop` and `root` columns: "none" for a kind that does not reduce, -1 for one
// without a root.
std::string coll_redop_column(const CollParamsRecord& p);
int64_t coll_root_column(const CollParamsRecord& p);

}  // namespace tpb
