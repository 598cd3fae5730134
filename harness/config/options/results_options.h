// The options of the verbs over results folders (compare, diagnose, whatif, report, export).
#pragma once
#include "harness/config/options/point_options.h"
#include "harness/config/options/serve_options.h"

namespace tpb::opt {

// clang-format off
inline constexpr OptionDef whatif_chunk{"chunk", T::integer, "512",
    "serve points: chunked_prefill's token budget per step", 1, 1 << 20};
inline constexpr OptionDef whatif_kv_budget = variant_of(kv_budget, "",
    "serve points: kv_budget's cache in tokens", "every running sequence at its longest");
inline constexpr OptionDef whatif_max_batch = variant_of(max_batch, "",
    "serve points: max_batch's sequences per step", "twice the run's");
inline constexpr OptionDef whatif_topology = variant_of(topology, "",
    "run points: topology's interconnect, a preset of configs/topologies or a file",
    "not replayed");
inline constexpr OptionDef results_out = variant_of(out, "",
    "write DIR/compare.json (compare), DIR/report.md and DIR/plots (report)",
    "none for compare; the first results folder for report");
inline constexpr OptionDef format{"format", T::choice, "openmetrics",
    "the Prometheus text format or CSV", 0, 0, "", "openmetrics|csv"};
inline constexpr OptionDef report_trace{"trace", T::choice, "",
    "merged: also write DIR/trace-merged.json, every point's trace in one (a process per "
    "point and rank)", 0, 0, "", "merged", "none"};
// clang-format on

inline constexpr const OptionDef* kWhatifOptions[] = {
    &whatif_chunk, &whatif_kv_budget, &whatif_max_batch, &whatif_topology, &config_dir};

}  // namespace tpb::opt
