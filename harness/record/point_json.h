// Builds a point's record (results contract, ARCHITECTURE.md) from the analysis. This is the
// one record; the console table and every other printer read it.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "layers/cost_model.h"
#include "layers/device.h"

namespace tpb {

nlohmann::ordered_json params_json(const RunSpec& spec, int64_t layers);

nlohmann::ordered_json oom_point_json(const RunSpec& spec, int64_t layers, double need_bytes,
                                      double have_bytes);

nlohmann::ordered_json error_point_json(const RunSpec& spec, const std::string& reason);

nlohmann::ordered_json ok_point_json(const RunSpec& spec, int64_t layers, const StepCost& cost,
                                     const Peaks& peaks, const PointAnalysis& a,
                                     const std::vector<nlohmann::ordered_json>& rank_info,
                                     const DeviceCaps& caps);

nlohmann::ordered_json cost_json(const StepCost& c);

}  // namespace tpb
