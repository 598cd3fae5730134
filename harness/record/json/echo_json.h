// Blocks of results.json built from the specs and the device's state rather than from a
// record's fields(): the config's sweep plan (config.sweep), a rank's parsed --inject
// (ranks[].inject) and the summary a run adds to a rank's telemetry block. Here, so that
// results.json's keys are spelled in record/ alone. Also the top-level section names and the
// small blocks results_json.h declares beside the records (defined in echo_json.cc).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>

#include "harness/config/inject_spec.h"
#include "harness/config/run_spec.h"
#include "harness/config/serve_spec.h"
#include "harness/config/sweep_plan.h"

namespace tpb {

// ranks[].inject: what applies to the rank, the keys it sets only (rank always).
nlohmann::ordered_json inject_to_json(const InjectSpec& s);

// config.sweep: how the points were formed, the axes and the count.
nlohmann::ordered_json sweep_plan_to_json(const SweepPlan& plan);

// A sweep's config: the first point's resolved spec, each axis shown as its list, and the plan.
nlohmann::ordered_json sweep_config_json(const RunSpec& first, const SweepPlan& plan);

// A serve run's config: the run keys serve reads (not the fixed-batch ones it refuses) and the
// serve options.
nlohmann::ordered_json serve_config_json(const ServeSpec& s);

// Whether the rank's telemetry block sampled anything (its `available`).
bool telemetry_available(const nlohmann::ordered_json& telemetry);

// After the steps: the sampled utilisation's mean (null when no sample), and the clock lock's
// own block where --inject sm_clock asked for one.
void add_telemetry_summary(nlohmann::ordered_json& telemetry, std::optional<double> utilization,
                           const std::optional<nlohmann::ordered_json>& clock_lock);

}  // namespace tpb
