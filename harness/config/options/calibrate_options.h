// `tpbench calibrate`'s own options; it also takes kCalibratePointOptions of the point options.
#pragma once
#include "harness/config/options/point_options.h"

namespace tpb::opt {

// clang-format off
inline constexpr OptionDef name{"name", T::text, "", "profile name", 0, 0, "", "",
    "calibrated-HOST", "NAME"};
inline constexpr OptionDef max_bytes{"max_bytes", T::size, "64M",
    "largest all-reduce of the curve (1K..16G)"};
inline constexpr OptionDef reps{"reps", T::integer, "5",
    "repetitions per measurement (the best is kept)", 1, 1000};
inline constexpr OptionDef op_profile{"op_profile", T::boolean, "true",
    "time every op of the real layer step at a grid of shapes, for the model backend's "
    "efficiency table"};
inline constexpr OptionDef op_repeats{"op_repeats", T::integer, "3",
    "repeats of the op profile's grid (the fastest is kept)", 1, 100};
inline constexpr OptionDef calibrate_out = variant_of(out, "",
    "output directory (required: hardware.json and calibration.json go there)");
inline constexpr OptionDef runs{"runs", T::list, "",
    "with --from: recorded results (RESULTS folders or results.json, comma-separated) of the "
    "same device; each point at a shape the grid lacks joins the efficiency table", 0, 0, "",
    "", "none", "RESULTS"};
// clang-format on

inline constexpr const OptionDef* kCalibratePointOptions[] = {
    &backend,      &collective,         &model,     &dtype, &tp, &context,
    &blas_threads, &collective_timeout, &config_dir};
inline constexpr const OptionDef* kCalibrateOptions[] = {
    &calibrate_out, &name, &max_bytes, &reps, &op_profile, &op_repeats, &runs};

}  // namespace tpb::opt
