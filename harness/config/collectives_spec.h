// `tpbench collectives` options, validated. The size arithmetic per kind (coll_counts) is in
// collectives/kinds/coll_kind.h.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "collectives/bus_bandwidth.h"
#include "collectives/mpi/mpi_mode.h"

namespace tpb {

struct CollectivesSpec {
  CollKind kind = CollKind::all_reduce;
  std::string op = "sum";  // sum | max | min
  DType dtype = DType::fp32;
  std::string collective = "mpi";
  MpiMode mpi_mode = MpiMode::blocking;  // how --collective mpi waits
  std::string backend = "cpu";
  std::string topology = "default";
  // --inplace: the in-place half only. Measurement reads `inplace` as the half it runs; the
  // verb sets it per half on a copy.
  bool inplace = false;
  // The placements measured per size, out-of-place (false) first, as nccl-tests prints them:
  // both where the path can (MPI on host buffers, kinds with two buffers), else in-place.
  std::vector<bool> halves;
  // nccl-tests' -a: the time over ranks that is reported. 0 rank 0's, 1 the mean (default),
  // 2 the minimum, 3 the maximum.
  int average = 1;
  std::string output_file;  // -J: nccl-tests' JSON (version 2) written here by rank 0
  bool baseline = false;    // also time a plain blocking MPI loop
  int root = 0;
  std::vector<int64_t> sizes;  // requested bytes, ascending
  int warmup = 5, iters = 20;
  // After the timed pass, a second pass of `iters` calls stamped one by one, for percentiles,
  // skew and wait (harness/measure/timed_pass.h). calibrate needs the mean alone.
  bool stamped_pass = true;
  double timeout_s = 600;
  int sync_rounds = 32;
  std::string out, config_dir;
  // --backend model: virtual ranks in this one process, NCCL's tuning model on a modelled
  // fabric (the topology preset's model section).
  int world = 0;              // virtual ranks (0: the MPI world measures)
  std::string algo = "auto";  // ring | tree | nvls | auto
  int gpus_per_node = 0;      // ranks per node (default: the preset's)
  // --eager: the custom all-reduce called outside a CUDA graph on an unregistered input, as an
  // eager benchmark times it (the preset's custom_allreduce.eager_copy on top of the kernel).
  bool eager = false;
};

// Validates the flat config; throws BadInput naming the flag.
CollectivesSpec resolve_coll_spec(const nlohmann::json& cfg, int world,
                                  const std::string& default_config_dir);
nlohmann::ordered_json coll_spec_to_json(const CollectivesSpec& s);

}  // namespace tpb
