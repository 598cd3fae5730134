// `tpbench collectives` options, validated, and nccl-tests' size arithmetic (elements per
// buffer for a message size of each collective kind on n ranks).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/bus_bandwidth.h"
#include "layers/base/dtype.h"

namespace tpb {

struct CollSweepSpec {
  CollKind kind = CollKind::all_reduce;
  std::string op = "sum";  // sum | max | min
  DType dtype = DType::fp32;
  std::string collective = "mpi";
  std::string backend = "cpu";
  std::string topology = "default";
  bool inplace = false;
  bool baseline = false;  // also time a plain blocking MPI loop
  int root = 0;
  std::vector<int64_t> sizes;  // requested bytes, ascending
  int warmup = 5, iters = 20;
  double timeout_s = 600;
  int sync_rounds = 32;
  std::string out, config_dir;
};

// Validates the flat config; throws BadInput naming the flag.
CollSweepSpec resolve_coll_spec(const nlohmann::json& cfg, int world,
                                const std::string& default_config_dir);
nlohmann::ordered_json coll_spec_to_json(const CollSweepSpec& s);

// Elements per rank buffer for `bytes` of `kind` on n ranks: nccl-tests' rounding (down to a
// multiple of n elements for the scatter/gather kinds). 0 = too small to run.
struct CollCounts {
  int64_t send = 0, recv = 0;  // elements in this rank's send and receive buffers
  int64_t bytes = 0;           // the size S reported and used for algbw
};
CollCounts coll_counts(CollKind kind, int64_t bytes, DType t, int n);

}  // namespace tpb
