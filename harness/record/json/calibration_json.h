// The one mapping between calibrate's records and its three files (results/SCHEMA.md,
// "calibration.json"): every key of calibration.json, hardware.json and topology.json is spelled
// in calibration_json.cc and nowhere else, and the files' names and layout are set here.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harness/record/calibration_record.h"

namespace tpb {

nlohmann::ordered_json to_json(const CalibrationRecord& r);
nlohmann::ordered_json to_json(const HardwareProfileRecord& r);
nlohmann::ordered_json to_json(const MeasuredTopologyRecord& r);
// The topology's "model" section alone: what collectives/model/fabric.h parse_fabric reads.
nlohmann::ordered_json fabric_section_json(const MeasuredTopologyRecord& r);

// The inverse of to_json for a calibration.json, which may come from another machine or another
// version of calibrate (`calibrate --from`). `where` names the file in messages: BadInput
// "<where>: not a calibration.json (its schema is not tpbench.calibration)", or "<where>:
// calibration field '<path>' is missing or not <what it must be>" naming the first field that
// is not as calibrate writes it (peaks.device_ops.fp32.add_GBps, op_profile[3].status, ...).
CalibrationRecord calibration_from_json(const nlohmann::ordered_json& j, const std::string& where);

// Where calibrate's files go in DIR.
std::string calibration_path(const std::string& dir);
std::string hardware_profile_path(const std::string& dir);
std::string topology_path(const std::string& dir);

// DIR/calibration.json and DIR/hardware.json (the record's hardware, which it must hold), and
// DIR/topology.json when there is a measured fabric; each written atomically.
void write_calibration(const std::string& dir, const CalibrationRecord& r,
                       const std::optional<MeasuredTopologyRecord>& topology);
// DIR/hardware.json alone (calibrate --from).
void write_hardware_profile(const std::string& dir, const HardwareProfileRecord& hw);
// DIR/topology.json alone (calibrate --from an nccl-tests output).
void write_measured_topology(const std::string& dir, const MeasuredTopologyRecord& t);

}  // namespace tpb
