// Picking this rank's GPU around MPI_Init: from the launcher's local rank before it (so a
// CUDA-aware MPI makes its context on the rank's own GPU, not GPU 0), checked after it against
// MPI's node-local rank, and the host-wide verdict on ranks sharing one GPU.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/mpi/device_pick.h"
#include "harness/mpi/world.h"

namespace tpb {

// What a command's config says about the device it will open.
struct DeviceIntent {
  bool opens_device = false;  // run, sweep, serve, collectives, calibrate
  std::string backend;
  std::vector<std::string> collectives;  // every value the config names (a sweep may list two)
};

// Read from the parsed command; a value that cannot be read leaves the verb to refuse it.
DeviceIntent device_intent(const std::string& verb, const nlohmann::json& config);

// Before MPI_Init: the launcher's local rank from `env` and, when it said one and the intent
// opens a GPU, that GPU made current. Throws BadInput when the GPU cannot be used.
DevicePick pick_device_before_mpi(const DeviceIntent& in, const EnvMap& env);

// After MPI_Init, on this rank alone: picks from MPI's node-local rank where no launcher said,
// and prints a line where the launcher and MPI disagree. Throws BadInput when the GPU cannot
// be used (call it inside agree()).
void settle_device(const DeviceIntent& in, World& w);

// After settle_device, collective over w.comm (call it inside agree() of its own, which every
// rank reaches): throws BadInput when NCCL would run two ranks of a host on one GPU; under
// --collective mpi warns once per GPU and marks w.device.shared.
void judge_gpu_sharing(const DeviceIntent& in, World& w);

}  // namespace tpb
