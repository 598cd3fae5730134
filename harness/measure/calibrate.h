// `tpbench calibrate`: measured peaks for a hardware profile. Three parts, each through the
// code the benchmark itself runs:
//  - memory bandwidth and GEMM FLOP/s through the Device interface (Device::add streams two
//    reads and a write per element; Device::gemm is what the layers call), on every rank at
//    once, so shared memory bandwidth is divided as during a run;
//  - GEMM FLOP/s by shape: the model's four TP-sharded GEMMs at several token counts, with
//    FLOPs and bytes from the cost model (layers/cost_model.h), so each shape can be judged
//    against both peaks;
//  - the all-reduce latency/bandwidth curve through the run's Collective, with a two-parameter
//    fit t(S) = alpha + S / algbw (alpha: the latency floor; algbw: the asymptote).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "layers/device.h"
#include "layers/model_shape.h"

namespace tpb {

struct GemmShapeResult {
  std::string op;  // "qkv_proj" | "o_proj" | "gate_up_proj" | "down_proj"
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0;           // best of the repetitions
  double flops = 0, bytes = 0;  // cost model, per call
};

// Best-of-`reps` time of each of the model's sharded GEMMs (y[m,n] = x[m,k] w[n,k]^T) for
// each m, on `dev`, with W cycled through enough copies to exceed 4x `llc_bytes` (a step
// reads every layer's own weights; one W would be served from cache).
std::vector<GemmShapeResult> measure_gemm_shapes(Device& dev, const ModelShape& shape, int tp,
                                                 DType t, const std::vector<int64_t>& ms, int reps,
                                                 double llc_bytes);

struct DeviceOpsPeaks {
  double add_bw = 0;      // bytes/s: Device::add over buffers of `stream_bytes` each
  double gemm_flops = 0;  // FLOP/s: Device::gemm, square `gemm_dim`
  int64_t stream_bytes = 0, gemm_dim = 0;
};
DeviceOpsPeaks measure_device_ops(Device& dev, DType t, int64_t stream_bytes, int64_t gemm_dim,
                                  int reps);

// alpha: the median time of the three smallest sizes; algbw: the largest size's bytes over its
// time net of alpha (its time alone when that is not positive). Sizes ascending, >= 3 points.
struct AlphaBeta {
  double alpha_s = 0;
  double algbw = 0;  // bytes/s
};
AlphaBeta fit_alpha_beta(const std::vector<int64_t>& bytes, const std::vector<double>& seconds);

}  // namespace tpb
