// What a GPU profile says real kernels reach below its datasheet roofline (issue 32, items 2, 4
// and 5): fractions of the peaks by shape, a fixed cost per kernel, and the engine's cost per
// step. Each carries the measurement it comes from. A profile without them (or loaded as
// NAME:datasheet) prices every op at its roofline: today's upper bound.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tpb {

// A fraction of a peak as a function of one size x (bytes moved, tokens, context): linear in
// log2(x) between points, the end value outside them. Empty: 1 (the roofline).
struct FractionCurve {
  std::vector<std::pair<double, double>> points;  // (x, fraction), sorted by x
  std::string source;
  bool empty() const { return points.empty(); }
  double at(double x) const;
};

// Seconds each kernel adds beyond its op's priced time: launch, ramp and tail, and the idle at
// the kernel boundary. Launched one by one (eager) or replayed from a CUDA graph.
struct KernelOverhead {
  double eager_s = 0;
  double graph_s = 0;
  std::string source;
  bool empty() const { return eager_s == 0 && graph_s == 0; }
  double per_kernel(bool cuda_graph) const { return cuda_graph ? graph_s : eager_s; }
};

struct Achievable {
  FractionCurve hbm_stream;         // x = bytes one op moves per layer: of peak_bw
  FractionCurve gemm;               // x = the GEMM's rows (tokens): of peak FLOP/s
  FractionCurve decode_attention;   // x = cached context: of peak_bw
  FractionCurve prefill_attention;  // x = prompt tokens: of peak FLOP/s
  KernelOverhead kernel;
  double engine_step_s = 0;  // host or scheduler time per step, with no device work
  std::string engine_source;
  bool empty() const {
    return hbm_stream.empty() && gemm.empty() && decode_attention.empty() &&
           prefill_attention.empty() && kernel.empty() && engine_step_s == 0;
  }
};

// The profile's "achievable" object; `where` names the file in errors (BadInput).
Achievable achievable_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::ordered_json achievable_to_json(const Achievable& a);

}  // namespace tpb
