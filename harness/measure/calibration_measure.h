// `tpbench calibrate`'s measurement as one call: the peaks, the GEMM table, the all-reduce curve
// and the op profile (calibrate.h and op_profile.h say how each is measured), reduced over the
// ranks into a CalibrationRecord. No files and no printing: the verb writes the record through
// record/json/calibration_json.h.
#pragma once
#include <cstdint>
#include <string>

#include "base/dtype.h"
#include "harness/measure/op_profile.h"
#include "harness/mpi/world.h"
#include "harness/record/calibration_record.h"
#include "layers/device.h"
#include "layers/model_shape.h"

namespace tpb {

// What calibrate measures, as its options resolved it.
struct CalibrateSpec {
  std::string backend, collective, model, config_dir;
  DType dtype = DType::fp32;  // the GEMM table's and the op profile's: the run's (backend default)
  int tp = 1;                 // the GEMM table's shapes are sharded for this degree
  int blas_threads = 1, reps = 5;
  int64_t max_bytes = 0;   // the all-reduce curve's largest size
  int64_t context = 1024;  // the op profile's decode context
  bool op_profile = true;
  int op_repeats = 3;
  double collective_timeout_s = 600;
};

// Collective over the world: every rank measures at once, and every rank returns the record
// (the best rank's peaks, the slowest rank's times), so every rank judges the op profile by the
// same peaks; the op profile's points are on rank 0 only. `context` is the run's, as the record
// states it; `run_point` runs a grid point of the op profile. The gemm_shapes rows are judged
// against the record's peaks (calibration_profile.h); `hardware` is left for the caller.
CalibrationRecord measure_calibration(const World& w, Device& dev, const CalibrateSpec& s,
                                      const ModelShape& shape, RunContextRecord context,
                                      const GridPointRunner& run_point);

}  // namespace tpb
