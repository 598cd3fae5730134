// Why the straggler is slow: its per-op times against its TP group's, and what it measured
// about itself (time off its core, its SM clock, its device). The arrival count says which rank
// is late; this says where its extra time goes, in the order a performance engineer would look:
// outside the ops (host work, launches), work that is not the model's (injected), one op,
// the memory-bound ops against the FLOP-bound ones, or every op alike. The classification reads
// only timelines, the cost model and the rank's own counters, never its --inject, so a test can
// hold it against a fault it made.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "layers/ops.h"

namespace tpb {

inline constexpr std::size_t kOpCount = static_cast<std::size_t>(Op::count);

struct CauseRank {
  int rank = 0, group = 0;
  std::array<double, kOpCount> op_s_per_step{};  // seconds per measured step, by op
  double outside_ops_s_per_step = 0;             // no compute and no collective in flight
  std::optional<double> descheduled_fraction;    // the rank's thread off its core
  std::optional<double> sm_clock_mhz;            // mean over the point (device telemetry)
  std::vector<std::string> throttle_reasons;
  std::string device;
};

struct CauseInput {
  std::vector<CauseRank> ranks;
  int straggler = -1;                        // world rank
  std::array<double, kOpCount> intensity{};  // FLOP per byte by op (cost model); 0: no FLOPs
  std::array<bool, kOpCount> priced{};       // the cost model prices the op
  double ridge = 0;                          // peak FLOP/s over peak bytes/s
};

struct StragglerCause {
  // outside_ops | injected_work | one_op | memory_bound_ops | flop_bound_ops | every_op |
  // no_excess | no_peers
  std::string kind;
  std::string text;  // one sentence, the verdict's
  // The straggler's excess per measured step over the group's lower median, op by op.
  double compute_excess_s = 0, outside_ops_excess_s = 0;
  // Its time over the group's on the ops below and above the ridge; null where the point has
  // under 10% of its op time on that side.
  std::optional<double> memory_bound_ratio, flop_bound_ratio;
  std::optional<std::string> top_op;  // the op with the most excess
  double top_op_share = 0;            // of the excess on the model's ops
  std::vector<std::string> evidence;  // the rank's own counters against the group's
};

StragglerCause straggler_cause(const CauseInput& in);

}  // namespace tpb
