// --check: the TP-sharded step against an independent host reference of the whole layer stack
// (layers/reference: fp64 on the host, from the same fill_hash weights, cache and input, no
// Device), and at TP > 1 also against the unsharded tp = 1 step on the same device.
#pragma once
#include <mpi.h>

#include <optional>

#include "collectives/collective.h"
#include "harness/record/point_builder.h"
#include "layers/device.h"
#include "tp_model/tp_model.h"

namespace tpb {

struct Verification {
  // Against the host fp64 reference; `passed` also requires the tp = 1 comparison (TP > 1).
  double max_abs_err = 0;
  double max_abs_ref = 0;
  double tolerance = 0;
  bool passed = false;
  // With the LM head: every sequence's sampled id is the reference's argmax, or within the
  // logits' tolerance of it where the reference's top two nearly tie.
  std::optional<bool> tokens_match;
  VerifySample detail;  // what travels besides the figures above
};

// Collective over the TP group: every rank steps its shard once from the seeded state; group
// rank 0 then computes the host reference (and, at TP > 1, the tp = 1 model) and compares.
// Valid on group rank 0.
Verification verify_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                      Collective& tp_coll, int group_rank);

// How much longer than --collective-timeout the other ranks may wait for group rank 0's
// --check, which they cannot tell from a hang: the fp64 host reference's work (the FLOPs of the
// unsharded step `q` prices, tp ignored) at kReferenceFlopsPerS, times kReferenceSafety.
// Derivation beside the constants in verify.cc.
double reference_allowance_s(const CostQuery& q);

}  // namespace tpb
