// An nccl-tests all_reduce_perf output as a measured topology: `tpbench calibrate --from FILE`
// reads the text table nccl-tests prints (or its -J JSON, or the same table tpbench collectives
// prints) and writes the measured fabric --backend model --topology takes, so that a cluster's
// own nccl-tests run prices the model's all-reduces. No MPI, no device, no I/O here: the
// verb reads the file and writes the record.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "harness/record/calibration_record.h"

namespace tpb {

// What the output says of its run and, per size, the out-of-place time of one call.
struct NcclTestsOutput {
  std::string test;          // "all_reduce_perf" (or tpbench's own "all_reduce")
  std::string nccl_version;  // "2.29.2"; empty where the output does not say
  std::string dtype;         // the type column: float, half, bfloat16, ...
  std::string gpu, host;     // the first rank's device name and host; empty where not printed
  int ranks = 0, hosts = 0;
  int processes = 0;   // distinct (host, pid) of the rank lines; fewer than ranks under -g > 1
  bool graph = false;  // CUDA-graph launches (-G)
  std::vector<std::pair<int64_t, double>> points;  // (bytes, seconds), bytes ascending
  int zero_size_rows = 0;                          // rows of 0 bytes, left out
};

// True where `text` reads as nccl-tests' output (its "# nThread" header or its JSON's results).
bool is_nccl_tests_output(const std::string& text);

// Each throws BadInput("<where>: ...") naming what is missing or malformed: a test other than
// all_reduce_perf, no rank lines, a row NCCL's debug output broke apart, sizes out of order.
NcclTestsOutput parse_nccl_tests_text(const std::string& text, const std::string& where);
NcclTestsOutput parse_nccl_tests_json(const nlohmann::json& j, const std::string& where);

// NCCL's version code (nccl-headers=22902, the JSON's nccl_version) as "2.29.2".
std::string nccl_version_name(int64_t code);

// Where one process drove several of the run's GPUs (nccl-tests -g N, N > 1): a sentence that
// says so and what it does to the small sizes; empty for one GPU per process.
std::string gpus_per_process_note(const NcclTestsOutput& r);

// The measured topology (harness/record/calibration_record.h) of the run, named `name`
// ("nccl-tests-HOST" where empty); `file` is cited in its source. Checked against what
// --topology accepts.
MeasuredTopologyRecord nccl_tests_topology(const NcclTestsOutput& r, const std::string& name,
                                           const std::string& file, const std::string& where);

}  // namespace tpb
