// calibration.json -> hardware.json: the one builder behind both `calibrate` (from the record it
// has just measured) and `calibrate --from FILE` (from a record written before, on any machine).
// No MPI, no device, no I/O: the record is all it reads, so the two cannot drift apart.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "layers/hardware.h"
#include "layers/model_shape.h"

namespace tpb {

// The profile's peaks, each the best figure the record holds and named by what reached it.
struct CalibrationPeaks {
  double bw = 0;                        // bytes/s
  std::map<std::string, double> flops;  // FLOP/s by dtype name
  std::string bw_from = "Device::add", fl_from = "Device::gemm";
};

// Every figure a profile is built from is named by its path in the record ("peaks.device_ops");
// a missing or mistyped one throws BadInput("<where>: calibration field '<path>' ...").
// `where` names the record: "--from 'FILE'", or calibrate's own run.

// From `peaks` (device_ops, and cpu_probe where the start-up probe ran) and `gemm_shapes`: a
// shape that beats a peak raises it, since a peak below a rate measured in the same run is not
// a peak.
CalibrationPeaks peaks_from_record(const nlohmann::ordered_json& cal, const std::string& where);

// Sets each gemm_shapes row's of_peak_flops and of_peak_bw against the peaks.
void judge_gemm_shapes(nlohmann::ordered_json& shapes, const CalibrationPeaks& p);

// The efficiency table from `op_profile`: of each grid point's repeats the one with the fastest
// median step (a repeat in a slow spell of the machine is the machine, not the op). Empty when
// the record has no op profile.
OpEfficiency efficiency_from_record(const nlohmann::ordered_json& cal, const std::string& where);

// The hardware.json for the record, checked by the parser that `--hardware` uses. `name`: the
// profile's name ("" for calibrated-HOST); `rebuilt_from`: the file the record was read from
// ("" when calibrate has just measured it), said in the profile's source. With the record's
// model `shape`, a cuda record's op profile also gives achievable.kernel_overhead: the idle at
// kernel boundaries (harness/measure/kernel_idle.h).
nlohmann::ordered_json hardware_from_calibration(const nlohmann::ordered_json& cal,
                                                 const std::string& name,
                                                 const std::string& rebuilt_from,
                                                 const std::string& where,
                                                 const ModelShape* shape = nullptr);

}  // namespace tpb
