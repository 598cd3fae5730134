// The idle at kernel boundaries, fitted from a calibration's own step and op times (issue 32,
// item 2): what a step takes beyond the sum of its ops' times, per kernel the CUDA backend's
// launch plan says the step launches. The efficiency table prices the ops; this prices the gaps.
#pragma once
#include <string>

#include "harness/record/calibration_record.h"
#include "layers/model_shape.h"
#include "layers/profile/achievable.h"

namespace tpb {

// Over the record's op_profile grid points (the fastest repeat of each, as the efficiency
// table takes them: calibration_profile.h fastest_repeats): (step p50 - sum of the ops'
// time_s_per_step) / kernels per step, the median as eager_s and graph_s (the record's steps ran
// eager), with the range in the source. Empty (no cost) when the record did not run on the cuda
// backend or has no op profile: the CPU's ops are timed back to back on the host, with no launch
// between them.
KernelOverhead kernel_idle_from_record(const CalibrationRecord& cal, const ModelShape& shape,
                                       const std::string& where);

}  // namespace tpb
