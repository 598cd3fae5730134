// Peak figures of one device (configs/hardware/*.json): datasheet dense or measured.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "layers/base/dtype.h"

namespace tpb {

struct Hardware {
  std::string name;
  std::map<std::string, double> peak_flops;  // by dtype name, FLOP/s, dense
  double peak_bw = 0;                        // bytes/s, device memory
  double memory_bytes = 0;                   // capacity per device
  double llc_bytes = 0;                      // last-level cache (L2 on GPUs, L3 on CPUs)
  double link_bw = 0;                        // bytes/s per direction to a peer, 0 if unknown
  std::string source;                        // "datasheet (dense)" | "measured (...)"
  bool measure_at_startup = false;           // peaks come from the start-up probe

  // Throws BadInput when the dtype has no peak in this profile.
  double flops_for(DType t) const;
};

Hardware hardware_from_json(const nlohmann::json& j, const std::string& where);
Hardware load_hardware(const std::string& name_or_path, const std::string& config_dir);
nlohmann::ordered_json hardware_to_json(const Hardware& h);

// The configs/hardware profile of a GPU by its CUDA device name ("NVIDIA H200" -> "h200-sxm"),
// or "" when no profile describes it (a PCIe or NVL variant, an unknown part): its peaks
// differ from the SXM parts' and guessing would misstate MBU and MFU.
std::string hardware_for_device(const std::string& device_name);

}  // namespace tpb
