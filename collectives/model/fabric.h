// A modelled interconnect (--backend model): what a topology preset's "model" section says of
// the links inside a node and between nodes. Each figure's source is written beside it in the
// preset file (configs/topologies/); nothing here is measured.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/model/nccl_tuning.h"

namespace tpb {

// NCCL's latency classes (src/graph/tuning.cc hwLat: NVLink, PCI, network).
enum class LinkHw { nvlink, pci, net };

struct LinkTier {
  LinkHw hw = LinkHw::nvlink;
  // Inside a node: per GPU and direction. Between nodes: per NIC and direction.
  double line_GBps = 0;
  // The share of line_GBps a ring with NCCL's Simple protocol reaches (NCCL's own per-link
  // figure over the line rate, or a measured one; the preset says which).
  double efficiency = 0;
  double bus_GBps() const { return line_GBps * efficiency; }
};

// An all-reduce curve measured through a real collective (tpbench calibrate writes one for
// the host it ran on), used in place of NCCL's model: one group size, all-reduce only.
struct MeasuredCurve {
  std::string collective;                          // "mpi" | "nccl": what was timed
  int ranks = 0;                                   // the group size it was timed over
  std::vector<std::pair<int64_t, double>> points;  // (bytes, seconds), bytes ascending
  // Linear in log-log between the points; below the first, its time; above the last, the last
  // time scaled by bytes (the bandwidth the largest size reached).
  double time_s(int64_t bytes) const;
};

// A serving engine's own all-reduce over NVLink P2P (vLLM's custom all-reduce; SGLang and
// TensorRT-LLM run the same two kernels): every rank reads its peers' registered buffers.
// one-shot: latency + (n - 1) S / (line x efficiency); two-shot (a reduce-scatter, then an
// all-gather, both by P2P reads): latency + 2 (n - 1) / n x S / (line x efficiency). Each
// figure's source is in the preset's custom_allreduce section.
struct CustomKernel {
  double latency_us = 0;      // launch, the start/end barriers and the first P2P round trip
  double p2p_efficiency = 0;  // the share of intra.line_GBps the kernel's reads reach
};
struct CustomAllReduce {
  // The engine takes the custom all-reduce below max_bytes[i] at 2 (i + 1) ranks (2, 4, 6, 8).
  std::array<int64_t, 4> max_bytes{};
  // 0 (never taken) at a group size the engine does not run it at.
  int64_t max_for(int ranks) const {
    if (ranks < 2 || ranks > 8 || ranks % 2 != 0) return 0;
    return max_bytes[static_cast<std::size_t>(ranks / 2 - 1)];
  }
  CustomKernel oneshot, twoshot;
  // An eager call on an unregistered input (vLLM copies it into its registered buffer, then
  // launches the kernel): what the copy adds to the kernel's time, a fixed part (the copy's
  // launch and its gap before the kernel) and its bytes, read and written once each at the
  // HBM rate hbm_GBps. Absent: not modelled.
  struct EagerCopy {
    double latency_us = 0, hbm_GBps = 0;
  };
  std::optional<EagerCopy> eager_copy;
};

struct Fabric {
  std::string name, description;
  int gpus_per_node = 8;
  LinkTier intra;
  std::optional<LinkTier> inter;  // absent: a single node
  int nics_per_node = 0;          // with inter: one NIC per GPU on rail-optimised nodes
  // NVLink SHARP (NVSwitch 3 and later): the share of the intra line rate that the
  // switch-reduced all-reduce's traffic reaches. Absent: no NVLS on this fabric.
  std::optional<double> nvls_efficiency;
  std::optional<CustomAllReduce> custom_ar;  // absent: NCCL runs every all-reduce
  std::optional<MeasuredCurve> measured;     // present: collectives come from it, not the model
  // The NCCL release whose tuning constants the model uses: the preset's "nccl", or
  // --topology PRESET:nccl-VERSION; NCCL 2.20.3 when neither says.
  const NcclTuning* nccl = &default_nccl_tuning();
  // The GPUs' generation ("gpu_arch"): where a release's constants depend on it. Absent: a
  // release that needs it refuses the preset.
  std::optional<GpuArch> gpu_arch;
  nlohmann::json preset;  // the whole preset file as read, sources included (for the results)
};

// The "model" section of the preset named (or the path given) by `text`, optionally suffixed
// ":nccl-VERSION" to model another NCCL release's tuning. "default" is nvlink4. Throws
// BadInput naming --topology: unknown preset or release, a preset without a model section, a
// field out of range.
Fabric load_fabric(const std::string& text, const std::string& config_dir);

// Parses one "model" section; `where` names the file in messages.
Fabric parse_fabric(const nlohmann::json& model, const std::string& where);

const char* link_hw_name(LinkHw hw);

}  // namespace tpb
