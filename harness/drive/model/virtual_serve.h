// `serve --backend model`: the serving loop of drive/serve/serve_runner.cc on one TP group of
// virtual ranks. The same scheduler plans every step; the step's mixed batch is priced by the
// cost model (mixed_step_cost) and stepped through a VirtualGroup, so a step's duration is the
// modelled group's, plus --host-overhead; the same ServeRun comes out for the same records,
// metrics, curve and diagnosis. Deterministic: the same spec gives the same run.
#pragma once
#include <cstddef>

#include "collectives/model/fabric.h"
#include "harness/analysis/peaks.h"
#include "harness/config/serve_spec.h"
#include "harness/drive/serve/serve_runner.h"

namespace tpb {

// Segments kept for the timeline analysis: past this many, every other kept step is dropped
// (and every other step from then on), so a long run keeps an even sample of its steps.
// The step log, the ITL attribution and the serving metrics cover every step regardless.
inline constexpr std::size_t kModelServeSegments = 4'000'000;

ServeResult run_model_serve_point(const ServeSpec& spec, std::size_t load_index, const Peaks& peaks,
                                  const Fabric& fabric,
                                  std::size_t max_segments = kModelServeSegments);

}  // namespace tpb
