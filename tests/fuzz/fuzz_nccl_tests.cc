// libFuzzer target: calibrate --from's reader of nccl-tests outputs, a file a user hands over
// from another machine. tpb::BadInput is the expected answer to bad text; anything else (another
// exception, a crash, a sanitizer report, an accepted run that breaks the promises below) is a
// finding.
//
// Input layout: byte 0 picks the reader: odd, the -J JSON; even, the printed table.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "harness/measure/nccl_tests_import.h"
#include "harness/record/json/calibration_json.h"

namespace {

// What an accepted run promises (harness/measure/nccl_tests_import.h): a group of at least 2 in
// at least one process, and a curve of at least 2 ascending sizes with positive, finite times.
bool sane(const tpb::NcclTestsOutput& r) {
  if (r.ranks < 2 || r.processes < 1 || r.processes > r.ranks || r.points.size() < 2) return false;
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& [bytes, s] = r.points[i];
    if (bytes < 1 || !(s > 0) || !std::isfinite(s)) return false;
    if (i > 0 && bytes <= r.points[i - 1].first) return false;
  }
  return true;
}

// The imported topology prices its own group at every size finitely and positively.
void price(const tpb::NcclTestsOutput& r) {
  const tpb::MeasuredTopologyRecord t = tpb::nccl_tests_topology(r, "", "fuzz.txt", "fuzz");
  const tpb::Fabric f = tpb::parse_fabric(tpb::fabric_section_json(t), "fuzz");
  const int nodes = std::max(1, r.hosts);
  for (int64_t bytes :
       {int64_t{1}, r.points.front().first, r.points.back().first, r.points.back().first * 2}) {
    const double s = tpb::model_collective(f, tpb::CollKind::all_reduce, bytes, {r.ranks, nodes},
                                           tpb::ModelAlgo::automatic)
                         .time_s;
    if (!(s > 0) || !std::isfinite(s)) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    tpb::NcclTestsOutput r;
    if (data[0] & 1) {
      const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded()) return 0;
      r = tpb::parse_nccl_tests_json(j, "fuzz");
    } else {
      (void)tpb::is_nccl_tests_output(text);
      r = tpb::parse_nccl_tests_text(text, "fuzz");
    }
    if (!sane(r)) __builtin_trap();
    price(r);
  } catch (const tpb::BadInput&) {
  }
  return 0;
}
