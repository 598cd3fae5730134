// Maps a cost-model query onto the launch plan's layer dimensions. Separate from
// launch_plan.h because it needs the model shapes (and their JSON), which the MPI-free GPU
// device check does without.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/cost_model.h"
#include "layers/cuda/plan/launch_plan.h"

namespace tpb {

// One layer on one rank (tp rank 0; every rank has the same shapes).
LayerDims layer_dims(const CostQuery& q, int sm_count = kDefaultSmCount);

// Layers the step runs (q.layers, or the model's n_layers when 0).
int64_t step_layers(const CostQuery& q);

// Every kernel of one step: layer_launch_plan() repeated step_layers() times.
std::vector<KernelLaunch> step_launch_plan(const CostQuery& q, int sm_count = kDefaultSmCount);

}  // namespace tpb
