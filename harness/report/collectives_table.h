// Console rows of `tpbench collectives` in nccl-tests' layout: one row per message size, printed
// from the size's out-of-place and in-place records (coll_point_builder.h builds them). The
// console prints only what the records hold.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/config/collectives_spec.h"
#include "harness/record/coll_point_builder.h"
#include "harness/record/coll_point_record.h"
#include "harness/record/json/results_writer.h"

namespace tpb {

std::string coll_table_header(const CollectivesSpec& s, int n);
// One message size: both halves' nccl-tests columns, then tpbench's.
std::string coll_table_row(const CollSizeRow& row, bool baseline);

// nccl-tests' closing lines: wrong values in all, and the mean busbw over sizes.
std::string coll_summary_text(const CollSummaryRecord& s);

// Rank 0, after the last size: prints the closing lines and, with a writer, stores them as the
// results' summary section and names `out`/results.json. Returns the number of wrong values.
int64_t finish_coll_sweep(const std::string& out, const std::vector<CollPointRecord>& points,
                          ResultsWriter* writer);

}  // namespace tpb
