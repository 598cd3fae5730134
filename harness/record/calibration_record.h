// `tpbench calibrate`'s records as plain data (results/SCHEMA.md, "calibration.json"): what
// harness/measure measures and builds from a measurement, and what record/json/calibration_json.h
// writes and reads. Figures keep the files' units (GB/s, GFLOP/s, seconds), so that a record
// read back from a file is the one that was written, to the last bit.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/record/context_record.h"
#include "harness/record/point_record.h"

namespace tpb {

struct CalibrationModelRecord {
  std::string name;
  int64_t tp = 0;  // the degree the GEMM table's shapes are sharded for
};

// Device::add (x += y: two reads and a write per element) and Device::gemm (square gemm_dim) in
// one dtype; the best rank's, all ranks measuring at once.
struct DeviceOpsPeakRecord {
  double add_GBps = 0, gemm_GFLOPs = 0;
  int64_t stream_bytes = 0, gemm_dim = 0;
};

// The CPU start-up probe's kernels (BLAS sdot, saxpy, sgemm), the best rank's.
struct CpuProbePeakRecord {
  double read_GBps = 0, axpy_GBps = 0, sgemm_GFLOPs = 0;
};

struct CalibrationPeaksRecord {
  // By dtype name, in the order the device lists its dtypes (the order they were measured in).
  nlohmann::ordered_map<std::string, DeviceOpsPeakRecord> device_ops;
  std::optional<CpuProbePeakRecord> cpu_probe;  // where the start-up probe runs
};

// One of the model's sharded GEMMs at one token count m: y[m,n] = x[m,k] w[n,k]^T.
struct GemmShapeRecord {
  std::string op;  // "qkv_proj" | "o_proj" | "gate_up_proj" | "down_proj"
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  double time_s = 0;            // the slowest rank's best of the repetitions
  double gflops = 0, gbps = 0;  // cost-model FLOPs and bytes over time_s
  double of_peak_flops = 0;     // against the profile's peaks (set once they are known)
  double of_peak_bw = 0;
};

struct AllReducePointRecord {
  int64_t bytes = 0;
  double time_s = 0;  // the slowest rank's mean per call
  double algbw_GBps = 0, busbw_GBps = 0;
};

// The all-reduce curve through the run's collective. One rank measures none: every field is
// absent and the record is written as {}. The fit needs three sizes or more.
struct AllReduceRecord {
  std::optional<std::string> collective;
  std::optional<int64_t> ranks;
  std::optional<std::vector<AllReducePointRecord>> points;
  std::optional<int64_t> wrong;  // wrong elements, summed over ranks
  std::optional<double> alpha_s, algbw_GBps, busbw_GBps;
  std::optional<std::string> fit;  // how alpha and algbw were had
  bool measured() const { return points.has_value(); }
};

// One compute op of an op-profile point against its roofline from the calibrated peaks.
struct OpTimeRecord {
  std::string op;
  double time_s_per_step = 0;  // the op's mean scaled by the step's median over its mean
  double roofline_s = 0, fraction = 0;
};

// One repeat of one grid point of the op profile (a real layer step).
struct OpProfilePointRecord {
  int64_t repeat = 0;
  std::string phase;
  int64_t tp = 0, batch = 0, prompt = 0, context = 0;
  PointStatus status = PointStatus::ok;
  std::optional<double> step_p50_s, step_mean_s;  // ok points
  std::optional<std::vector<OpTimeRecord>> ops;   // ok points
  std::optional<std::string> reason;              // the others
};

// DIR/hardware.json: a profile --hardware accepts, built from a calibration record. The
// efficiency table and the achievable block are as layers/hardware.cc writes a profile's.
struct HardwareProfileRecord {
  std::string name;
  std::map<std::string, double> peak_flops;  // FLOP/s by dtype name
  double peak_bw = 0, memory_bytes = 0, llc_bytes = 0, link_bw = 0;
  std::string source;
  bool measure_at_startup = false;
  std::optional<nlohmann::ordered_json> efficiency, achievable;
};

// DIR/calibration.json: every figure behind the profile.
struct CalibrationRecord {
  RunContextRecord context;
  CalibrationModelRecord model;
  // The dtype of gemm_shapes and op_profile; absent in records written before it was stated.
  std::optional<std::string> dtype;
  CalibrationPeaksRecord peaks;
  std::vector<GemmShapeRecord> gemm_shapes;
  AllReduceRecord all_reduce;
  std::vector<OpProfilePointRecord> op_profile;   // empty with --op-profile off
  std::optional<HardwareProfileRecord> hardware;  // the profile written beside it
};

// DIR/topology.json: a topology preset whose fabric is the measured all-reduce curve
// (collectives/model/fabric.h MeasuredCurve), for --backend model --topology.
struct MeasuredFabricRecord {
  std::string collective;
  int64_t ranks = 0;
  std::vector<std::pair<int64_t, double>> all_reduce;  // (bytes, seconds), bytes ascending
  std::string source;
};

struct TopologyModelRecord {
  int64_t gpus_per_node = 0;
  MeasuredFabricRecord measured;
};

struct MeasuredTopologyRecord {
  std::string name, description;
  TopologyModelRecord model;
};

}  // namespace tpb
