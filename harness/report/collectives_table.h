// Records and console rows of `tpbench collectives`: one point per message size, built on rank
// 0 from every rank's CollRankResult. The console prints only what the record holds.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/config/collectives_spec.h"
#include "harness/record/collective_rank_result.h"

namespace tpb {

// The point record: params {kind, op, dtype, bytes, count, ranks, inplace, ...}, status "ok",
// metrics {time_s {mean, p50, p99, ...}, algbw_GBps, busbw_GBps, busbw_factor, wrong, ...},
// collectives {skew_s, wait_fraction, ...}, ranks[] {arrival lag, wait, transfer,
// arrived_last}, clock_sync and raw samples.
nlohmann::ordered_json coll_point_json(const CollectivesSpec& s, const CollCounts& c,
                                       const std::vector<CollRankResult>& ranks,
                                       const std::vector<std::string>& hosts);

std::string coll_table_header(const CollectivesSpec& s, int n);
std::string coll_table_row(const nlohmann::ordered_json& point, bool baseline);

// nccl-tests' closing lines: wrong values in all, and the mean busbw over sizes.
nlohmann::ordered_json coll_summary_json(const std::vector<nlohmann::ordered_json>& points);
std::string coll_summary_text(const nlohmann::ordered_json& summary);

}  // namespace tpb
