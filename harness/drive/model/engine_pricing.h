// A step's ops priced from the serving engine's own measured kernels (--engine with tables,
// issue 57): GEMMs by (rows, n, k), attention by the step's sequences, all-reduces by size and
// ranks from the engine's tables (configs/engine_tables), element-wise ops by the tables' rule;
// what no table covers at its roofline over the profile's hardware fractions, and said so.
#pragma once
#include <optional>

#include "collectives/model/collective_model.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/virtual_group.h"
#include "harness/record/point_record.h"
#include "layers/cost_model.h"
#include "layers/profile/engine_tables.h"
#include "layers/step_batch.h"

namespace tpb {

// The sequences of a fixed-batch step (run, sweep): `batch` sequences at the spec's context
// (decode, one new token each) or prompt (prefill, no cached prefix).
StepBatch uniform_rows(const RunSpec& spec);

// Compute op `c` of a step with these costs and rows, priced by the engine's tables; an op the
// engine runs inside another's kernel (EngineProfile::fused) costs nothing, its carrier pays.
// Never empty: an op no table covers takes its roofline over the profile's HBM-streaming and
// GEMM fractions (hardware facts, not tpbench's kernels), with PricedOp::table "roofline".
PricedOp engine_compute_op(const RunSpec& spec, const EngineTables& t, const StepCost& cost,
                           const OpCost& c, const StepBatch& rows, const Peaks& peaks);

// A collective of the step from the engine's tables: all-reduces from the table the engine
// uses for the step's kind (decode or prefill), NCCL's table where that has no row for the
// ranks; nullopt where the group leaves one node or no table has its ranks (the fabric model
// prices it then).
std::optional<PricedOp> engine_collective(const RunSpec& spec, const EngineTables& t, Op op,
                                          double bytes, Phase phase, ModelGroup g);

// What priced each op of `plan` (ops a profile priced, with no table, are left out), merged
// into `m`: per op its tables, and the worst coverage seen.
void note_pricing(OpPricingMap& m, const StepOpPlan& plan);

// "exact", "interpolated", "extrapolated" (a measured table) and the words the pricing adds:
// "rule" (a stated formula), "fused" (inside another op's kernel), "roofline" (no table).
const char* coverage_name(TableCoverage c);

}  // namespace tpb
