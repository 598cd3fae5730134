// A calibration record -> hardware.json and topology.json: the one builder behind both
// `calibrate` (from the record it has just measured) and `calibrate --from FILE` (from a record
// written before, on any machine, read by record/json/calibration_json.h). No MPI, no device,
// no I/O: the record is all it reads, so the two cannot drift apart.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/measure/recorded_runs.h"
#include "harness/record/calibration_record.h"
#include "layers/hardware.h"
#include "layers/model_shape.h"

namespace tpb {

// The profile's peaks, each the best figure the record holds and named by what reached it.
struct CalibrationPeaks {
  double bw = 0;                        // bytes/s
  std::map<std::string, double> flops;  // FLOP/s by dtype name
  std::string bw_from = "Device::add", fl_from = "Device::gemm";
};

// `where` names the record in messages: "--from 'FILE'", or calibrate's own run. A figure the
// profile needs that the record lacks throws BadInput("<where>: calibration field '<path>' ...").

// From `peaks` (device_ops, and cpu_probe where the start-up probe ran) and `gemm_shapes`: a
// shape that beats a peak raises it, since a peak below a rate measured in the same run is not
// a peak.
CalibrationPeaks peaks_from_record(const CalibrationRecord& cal);

// Sets each row's of_peak_flops and of_peak_bw against the peaks.
void judge_gemm_shapes(std::vector<GemmShapeRecord>& shapes, const CalibrationPeaks& p);

// The efficiency table's token count of a grid point: the batch, times the prompt in prefill.
int64_t table_tokens(const OpProfilePointRecord& r);

// Of each op-profile grid point (phase, tp, batch, prompt) its fastest ok repeat (fastest median
// step: a repeat in a slow spell of the machine is the machine, not the op), in the grid's
// order; the points with no ok repeat are left out.
std::vector<const OpProfilePointRecord*> fastest_repeats(const CalibrationRecord& cal,
                                                         const std::string& where);

// The efficiency table from the fastest repeats' op fractions, then the points `added` from
// recorded runs (recorded_runs.h), each named in the table's source. Empty when the record has
// no op profile.
OpEfficiency efficiency_from_record(const CalibrationRecord& cal, const std::string& where,
                                    const std::vector<RecordedOpPoint>& added = {});

// The hardware.json for the record, checked by the parser that `--hardware` uses. `name`: the
// profile's name ("" for calibrated-HOST); `rebuilt_from`: the file the record was read from
// ("" when calibrate has just measured it), said in the profile's source. With the record's
// model `shape`, a cuda record's op profile also gives achievable.kernel_overhead: the idle at
// kernel boundaries (harness/measure/kernel_idle.h), from the record's own steps alone: the
// `added` points of other runs widen the efficiency table only.
HardwareProfileRecord hardware_from_calibration(const CalibrationRecord& cal,
                                                const std::string& name,
                                                const std::string& rebuilt_from,
                                                const std::string& where,
                                                const ModelShape* shape = nullptr,
                                                const std::vector<RecordedOpPoint>& added = {});

// The topology preset whose fabric is the record's measured all-reduce curve (one node of the
// ranks that measured it), checked by the parser `--topology` uses; `where` names the file it
// is written to. The record must hold a curve (all_reduce.measured()).
MeasuredTopologyRecord measured_topology(const CalibrationRecord& cal, const std::string& where);

}  // namespace tpb
