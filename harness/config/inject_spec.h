// Imbalance injection specs (--inject): parsing and the per-rank view.
// Grammar: ENTRY[,ENTRY...], ENTRY = rank=R|all[:key=value]..., keys as in docs/ARCHITECTURE.md.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "layers/clock_control.h"
#include "layers/ops.h"

namespace tpb {

struct InjectSpec {
  int rank = -1;               // -1 = all ranks
  double slowdown = 1.0;       // compute takes F x as long
  double jitter_p = 0;         // probability per step ...
  double jitter_us = 0;        // ... of this much extra compute
  double host_delay_us = 0;    // host time per step with no device work
  double mem_reserve_gib = 0;  // capacity taken from the rank's budget
  bool mem_contend = false;    // a bandwidth hog beside the rank's work
  double clock_offset_ms = 0;  // shifts the rank's timestamps (tests the clock sync)
  double clock_drift_ppm = 0;  // the rank's clock runs fast by this much (tests drift correction)
  int hang_at_step = -1;       // the rank stops responding at this measured step
  // sm_clock, two forms. Locked: sm_clock=MHz[@PRIOR], a real NVML lock (CUDA backend, where
  // permitted) that restores PRIOR, the GPU's lock before the run ("unlocked" or "MIN-MAX"),
  // stated when NVML cannot read it. Emulated: sm_clock=emulate@F, a share F of the SMs held by
  // spinning blocks, no privileges needed.
  int sm_clock_mhz = 0;
  std::optional<GpuLock> sm_clock_prior;
  double sm_hold_fraction = 0;  // emulated form: 0 < F < 1
  // One compute op takes F x as long, inside its own stamp: a slow kernel, not extra work
  Op slow_op = Op::count;  // Op::count: none
  double slow_op_factor = 1.0;
};

// Throws BadInput naming --inject and the bad part.
std::vector<InjectSpec> parse_inject(const std::string& text);

// Everything that applies to `rank` merged into one spec (rank field = rank).
InjectSpec inject_for_rank(const std::vector<InjectSpec>& specs, int rank);

// Throws BadInput when a spec names a rank outside [0, world).
void validate_inject_ranks(const std::vector<InjectSpec>& specs, int world);

}  // namespace tpb
