// The device pick around MPI_Init; the pure parts are in harness/mpi/device_pick.h.
#include "harness/backends/device_setup.h"

#include <cstdlib>
#include <iostream>

#include "base/errors.h"
#include "harness/backends/registry.h"
#include "harness/config/axis.h"
#include "harness/config/backend_traits.h"

namespace tpb {

DeviceIntent device_intent(const std::string& verb, const nlohmann::json& config) {
  DeviceIntent in;
  in.opens_device = verb == "run" || verb == "sweep" || verb == "serve" || verb == "collectives" ||
                    verb == "calibrate";
  in.backend = config.contains("backend") && config["backend"].is_string()
                   ? config["backend"].get<std::string>()
                   : "cpu";
  try {
    in.collectives = config.contains("collective")
                         ? axis_values(config["collective"], "--collective", false)
                         : std::vector<std::string>{default_collective(in.backend)};
  } catch (const Error&) {  // the verb refuses it, with its own line
    in.collectives.clear();
  }
  return in;
}

DevicePick pick_device_before_mpi(const DeviceIntent& in, const EnvMap& env) {
  DevicePick p;
  p.launcher = launcher_local_rank(env);
  if (!in.opens_device) {
    p.reason = "this command opens no device";
    return p;
  }
  if (p.launcher.local_rank < 0) {
    p.reason = "picked after MPI_Init: " + p.launcher.source;
    return p;
  }
  pick_gpu(in.backend, p.launcher.local_rank, p);
  p.before_mpi_init = p.index >= 0;
  return p;
}

void settle_device(const DeviceIntent& in, World& w) {
  DevicePick& p = w.device;
  if (!in.opens_device) return;
  if (p.launcher.local_rank < 0) pick_gpu(in.backend, w.local_rank, p);
  const std::string mismatch = local_rank_mismatch(p.launcher, w.local_rank);
  if (!mismatch.empty())
    std::cerr << "warning: rank " << w.rank << " on " << w.host << ": " << mismatch << "\n";
}

void judge_gpu_sharing(const DeviceIntent& in, World& w) {
  DevicePick& p = w.device;
  if (!in.opens_device) return;  // the same on every rank: one command, one config
  // Collective over the world: every rank reaches it, GPU or not, and throws only after it.
  const auto bus_ids = allgather_host_strings(w.comm, p.pci_bus_id);
  const SharingVerdict v = gpu_sharing_verdict(bus_ids, w.local_rank, in.collectives, w.host,
                                               std::getenv("CUDA_VISIBLE_DEVICES"));
  if (v.action == SharingAction::refuse) throw BadInput(v.message);
  if (v.action == SharingAction::warn) {
    p.shared = true;
    // Once per GPU: by the lowest local rank on it.
    if (w.local_rank < v.shares_with.front()) std::cerr << "warning: " << v.message << "\n";
  }
}

}  // namespace tpb
