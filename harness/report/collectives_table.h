// Console rows of `tpbench collectives` in nccl-tests' layout: one row per message size, printed
// from the size's record (coll_point_builder.h builds it). The console prints only what the
// record holds.
#pragma once
#include <string>

#include "harness/config/collectives_spec.h"
#include "harness/record/coll_point_record.h"

namespace tpb {

std::string coll_table_header(const CollectivesSpec& s, int n);
std::string coll_table_row(const CollPointRecord& p, bool baseline);

// nccl-tests' closing lines: wrong values in all, and the mean busbw over sizes.
std::string coll_summary_text(const CollSummaryRecord& s);

}  // namespace tpb
