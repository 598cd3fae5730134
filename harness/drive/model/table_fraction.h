// An efficiency table's fraction for an op, inside its grid and past it (the model backend's
// compute ops; layers/hardware.h OpEfficiency).
#pragma once
#include <cstdint>

#include "harness/config/run_spec.h"
#include "layers/cost_model.h"

namespace tpb {

struct Peaks;  // harness/analysis/peaks.h

// The table's fraction for op `op` (its points named `name`: the op's own, or a stand-in's for
// the step's end) at `tokens` new tokens per step. Inside the grid: the table's own lookup.
// Past its largest point, holding the last fraction would scale the op's fixed time (launch,
// ramp, tail) with its work; the op's time goes on instead through its two largest points:
//   - a table measured on the CUDA backend's kernels: time = a x launches + b x plan roofline,
//     both from the CUDA launch plan at each token count (its kernels' every FLOP and byte,
//     the masked triangle and the score workspace of the native prefill attention included),
//     so an op whose launches grow with its work (that attention: one per query tile) keeps
//     its fixed cost per launch;
//   - otherwise, or where that fit has a negative part or a margin faster than the roofline:
//     the line through the two points, time against the cost model's roofline time, never
//     faster at the margin than the roofline itself.
double table_fraction(const RunSpec& spec, const char* name, Op op, Phase phase, int64_t tokens,
                      const Peaks& peaks);

// Whether the profile's efficiency table prices the kernels the CUDA launch plan lists (its
// engine is the plan's), so past its grid an op's time goes on by the plan.
bool extends_by_launch_plan(const RunSpec& spec);

}  // namespace tpb
