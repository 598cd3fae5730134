// The serving engine around the kernels (issue 32, item 5): the host work it adds per step and
// per launched kernel, which a modelled step pays where the device would otherwise run ahead.
// "none" (built in) is tpbench's own loop, which enqueues the next kernels while the device
// works; other engines are configs/engines/NAME.json, each with the measurement it comes from.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

struct EngineProfile {
  std::string name = "none";
  std::string description;
  // The host issues each kernel this long after the one before; a kernel starts no earlier
  // than its issue (an eager Python engine is launch-bound at small batch).
  double host_per_kernel_s = 0;
  // Host or scheduler work per step before its first kernel (input preparation, scheduling).
  double step_overhead_s = 0;
  // Whether the host waits for each step's tokens before issuing the next step (sampling on
  // the host), so its issue clock cannot run ahead across steps.
  bool syncs_per_step = true;
  std::string source;
  bool host_bound() const { return host_per_kernel_s > 0; }
};

// NAME (configs/engines/NAME.json, or the built-in "none") or a .json path. Throws BadInput
// naming --engine and the field.
EngineProfile load_engine(const std::string& name_or_path, const std::string& config_dir);
nlohmann::ordered_json engine_to_json(const EngineProfile& e);

}  // namespace tpb
