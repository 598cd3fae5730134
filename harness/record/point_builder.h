// Builds a point's record from what the driver knows: the spec for every status, and for an
// ok point the cost model, the peaks, the analysis and what each rank measured about itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/record/point_record.h"
#include "layers/cost_model.h"
#include "layers/device.h"

namespace tpb {

// What run --check knows beyond RankSample's four figures (1.12.0). Trivially copyable, so it
// travels in rank_gather's fixed part. All zero for serve --check, whose reference is still the
// unsharded tp = 1 step.
struct VerifySample {
  bool host_reference = false;  // the four figures are against the host fp64 layer stack
  double max_abs_ref = 0;
  int64_t tokens_near_tie = 0;  // sequences where the reference's top two logits nearly tie
  // TP > 1: the sharded step against the unsharded tp = 1 step on the same device as well.
  bool sharded_checked = false;
  double sharded_max_abs_err = 0, sharded_tolerance = 0;
  bool sharded_passed = false;
  bool sharded_tokens_checked = false, sharded_tokens_match = false;
};

// One rank's own measurements, gathered to rank 0 before the analysis. `rank` holds what the
// rank knows (host, device, group, inject, host thread, memory, clock, telemetry); the
// analysis fills in its metrics. Only verifiers (group rank 0 with --check) carry a result.
struct RankSample {
  RankRecord rank;
  bool is_verifier = false;
  double max_abs_err = 0, tolerance = 0;
  bool passed = false;
  std::optional<bool> tokens_match;  // with --lm-head: the sampled ids match the reference's
  VerifySample verify;
};

PointParams params_record(const RunSpec& spec, int64_t layers);

// Each op record's priced_by and table_coverage from `m` (an engine's tables priced the point);
// nothing when `m` is empty.
void attach_op_pricing(std::vector<OpRecord>& ops, const OpPricingMap& m);

// `check_bytes` > 0: the point would fit without --check, and it is the bytes --check's
// unsharded reference adds on group rank 0 (cost_model.h check_reference_need) that do not.
PointRecord oom_point(const RunSpec& spec, int64_t layers, double need_bytes, double have_bytes,
                      double check_bytes = 0);
PointRecord error_point(const RunSpec& spec, const std::string& reason);
// A point that was not attempted (a dtype the device lacks, peaks that could not be had).
PointRecord skipped_point(const RunSpec& spec, const std::string& reason);

// Which hosts each TP group spans, from the ranks' records.
TpPlacementRecord tp_placement(const std::vector<RankRecord>& ranks);

// `samples` is indexed by world rank.
PointRecord ok_point(const RunSpec& spec, int64_t layers, const StepCost& cost, const Peaks& peaks,
                     const PointAnalysis& a, const std::vector<RankSample>& samples,
                     const DeviceCaps& caps);

}  // namespace tpb
