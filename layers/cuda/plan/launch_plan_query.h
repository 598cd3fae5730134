// Maps a cost-model query onto the launch plan's layer dimensions. Separate from
// launch_plan.h because it needs the model shapes (and their JSON), which the MPI-free GPU
// device check does without.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "layers/cost_model.h"
#include "layers/cuda/plan/launch_plan.h"

namespace tpb {

// The engine whose kernels this plan lists (the model backend's engine axis: an efficiency
// table measured on them extends past its grid by the plan).
inline constexpr const char* kLaunchPlanEngine = "tpbench-cuda";

// One layer on one rank (tp rank 0; every rank has the same shapes).
LayerDims layer_dims(const CostQuery& q, int sm_count = kDefaultSmCount);

// Layers the step runs (q.layers, or the model's n_layers when 0).
int64_t step_layers(const CostQuery& q);

// Every kernel of one step: layer_launch_plan() repeated step_layers() times; fused (as
// CudaDevice runs a step without per-op stamps), the last layer's residual add at the end.
std::vector<KernelLaunch> step_launch_plan(const CostQuery& q, int sm_count = kDefaultSmCount,
                                           bool fused = false);

// Kernels a step launches per op, divided by the step's layers (a once-per-step kernel counts
// 1/layers): what the model backend charges each op's fixed cost per kernel by. A record whose
// kernel is launched once per tile (prefill attention's `launches`) counts once: its launches
// are queued back to back inside one Device call, with no host work or dependency on another
// op between them (an assumption; the per-kernel fit comes from decode steps, one launch per
// record). Collectives count 0 (the collective model prices them).
std::array<double, static_cast<std::size_t>(Op::count)> kernels_per_layer_op(
    const CostQuery& q, bool fused, int sm_count = kDefaultSmCount);

}  // namespace tpb
