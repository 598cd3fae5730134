// The key names here are nccl-tests' (src/util.cu, JSON_FILE_VERSION 2); times in us, bandwidths
// in GB/s, as its console. tpbench's own figures stay in results.json.
#include "harness/record/json/nccl_tests_json.h"

#include <fmt/format.h>

#include <ctime>
#include <fstream>

#include "base/errors.h"
#include "harness/record/coll_point_builder.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

oj half_json(const CollPointRecord* p) {
  if (p == nullptr) return nullptr;
  const CollMetricsRecord& m = p->metrics;
  return oj{{"time", m.time_s.mean * 1e6},
            {"alg_bw", m.algbw_GBps},
            {"bus_bw", m.busbw_GBps},
            {"nwrong", static_cast<double>(m.wrong)}};
}

oj config_json(const CollectivesSpec& s, int ranks) {
  oj c{{"nthreads", 1},
       {"ngpus", 1},
       {"minimum_bytes", s.sizes.empty() ? 0 : s.sizes.front()},
       {"maximum_bytes", s.sizes.empty() ? 0 : s.sizes.back()}};
  c["warmup_iters"] = s.warmup;
  c["iterations"] = s.iters;
  c["aggregated_iterations"] = 1;
  c["validation"] = 1;  // one verification call per size and half
  c["graph"] = 0;
  c["blocking_collectives"] = s.mpi_mode == MpiMode::blocking ? "true" : "false";
  c["average"] = s.average;
  c["ranks"] = ranks;
  return c;
}

}  // namespace

oj nccl_tests_json(const CollectivesSpec& s, const NcclTestsRun& run,
                   const std::vector<CollPointRecord>& points, const CollSummaryRecord& summary) {
  oj j{{"version", 2}, {"start_time", run.start_time}, {"args", run.argv}};
  j["env"] = oj::array();  // nccl-tests echoes the environment; tpbench's context holds its own
  j["config"] = config_json(s, run.ranks);
  oj results = oj::array();
  for (const CollSizeRow& row : coll_size_rows(points)) {
    const CollParamsRecord& p = row.any().params;
    results.push_back({{"size", p.bytes},
                       {"count", p.count},
                       {"type", dtype_nccl_name(parse_dtype(p.dtype, "dtype"))},
                       {"redop", coll_redop_column(p)},
                       // nccl-tests writes its root column as the printed, padded string.
                       {"root", fmt::format("{:>6}", coll_root_column(p))},
                       {"out_of_place", half_json(row.out_of_place)},
                       {"in_place", half_json(row.in_place)},
                       {"actual_iterations", p.iters},
                       {"experiment_name", "tpbench collectives " + p.kind}});
  }
  j["results"] = std::move(results);
  j["out_of_bounds"] = {{"count", summary.wrong_total},
                        {"okay", summary.wrong_total == 0 ? "true" : "false"}};
  j["average_bus_bandwidth"] = {{"bandwidth", summary.avg_busbw_GBps}, {"okay", "unchecked"}};
  j["errors"] = oj::array();
  j["end_time"] = run.end_time;
  return j;
}

void write_nccl_tests_json(const std::string& path, const oj& j) {
  std::ofstream f(path);
  if (!f) throw BadInput("-J/--output-file: cannot write " + path);
  f << j.dump(2) << "\n";
  if (!f) throw BadInput("-J/--output-file: cannot write " + path);
}

void check_nccl_tests_path(const std::string& path) {
  if (!std::ofstream(path, std::ios::app)) throw BadInput("-J/--output-file: cannot write " + path);
}

std::string nccl_tests_time_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace tpb
