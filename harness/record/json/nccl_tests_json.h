// nccl-tests' -J file (its JSON version 2: config, one `results` entry per size with
// out_of_place and in_place blocks, out_of_bounds, average_bus_bandwidth), filled from
// tpbench's collectives records, so scripts that read nccl-tests' JSON read tpbench's.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/config/collectives_spec.h"
#include "harness/record/coll_point_record.h"

namespace tpb {

struct NcclTestsRun {
  std::vector<std::string> argv;
  std::string start_time, end_time;  // "%Y-%m-%d %H:%M:%S", local time, as nccl-tests writes
  int ranks = 0;
};

nlohmann::ordered_json nccl_tests_json(const CollectivesSpec& s, const NcclTestsRun& run,
                                       const std::vector<CollPointRecord>& points,
                                       const CollSummaryRecord& summary);

// Writes `j` to `path` (replacing it: unlike nccl-tests, no `.N` suffix is probed); throws
// BadInput naming -J when it cannot.
void write_nccl_tests_json(const std::string& path, const nlohmann::ordered_json& j);

// Throws BadInput naming -J when `path` cannot be opened for writing (it is created empty).
void check_nccl_tests_path(const std::string& path);

// The local time now in nccl-tests' format.
std::string nccl_tests_time_now();

}  // namespace tpb
