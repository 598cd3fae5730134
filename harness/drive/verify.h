// --check: the TP-sharded step against an unsharded single-rank reference with the same
// weights, cache and input (every shard is cut from the same fill_hash tensors).
#pragma once
#include <mpi.h>

#include <optional>

#include "collectives/collective.h"
#include "layers/device.h"
#include "layers/tp_model.h"

namespace tpb {

struct Verification {
  double max_abs_err = 0;
  double max_abs_ref = 0;
  double tolerance = 0;
  bool passed = false;
  std::optional<bool> tokens_match;  // with the LM head: every sequence's sampled id equal
};

// Collective over the TP group: every rank steps its shard once from the seeded state;
// group rank 0 also builds the tp=1 model and compares. Valid on group rank 0.
Verification verify_against_reference(Device& dev, TpModel& sharded, const TpModelConfig& cfg,
                                      Collective& tp_coll, int group_rank);

}  // namespace tpb
