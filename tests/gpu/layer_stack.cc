// The device check's layer stack: step times and per-op breakdowns from mark() stamps.
#include "tests/gpu/layer_stack.h"

#include <algorithm>

namespace tpb {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

// Step time of `steps` steps (median), bracketed by one mark pair each.
double time_steps(CudaDevice& dev, Stack& st, bool prefill, int64_t batch, int64_t n, int steps) {
  for (int i = 0; i < 2; ++i) st.step(prefill, batch, n, nullptr);  // warm-up: GEMM plans
  dev.synchronize();
  for (int i = 0; i < steps; ++i) {
    dev.mark(static_cast<std::size_t>(2 * i));
    st.step(prefill, batch, n, nullptr);
    dev.mark(static_cast<std::size_t>(2 * i + 1));
  }
  dev.synchronize();
  std::vector<int64_t> ns(static_cast<std::size_t>(2 * steps));
  dev.collect_marks(0, ns.size(), ns.data());
  std::vector<double> d;
  for (int i = 0; i < steps; ++i)
    d.push_back(1e-9 * static_cast<double>(ns[2 * i + 1] - ns[2 * i]));
  return median(d);
}

// One step with every op stamped: per-op device time, and the stamp overhead it adds.
std::vector<double> op_breakdown(CudaDevice& dev, Stack& st, bool prefill, int64_t batch, int64_t n,
                                 int layers, double* stamped_step_s) {
  std::size_t slot = 0;
  dev.mark(slot++);
  st.step(prefill, batch, n, &slot);
  dev.mark(slot++);
  dev.synchronize();
  std::vector<int64_t> ns(slot);
  dev.collect_marks(0, slot, ns.data());
  *stamped_step_s = 1e-9 * static_cast<double>(ns[slot - 1] - ns[0]);
  std::vector<double> per_op(kComputeOps, 0.0);
  for (int l = 0; l < layers; ++l)
    for (int o = 0; o < kComputeOps; ++o) {
      const std::size_t i = 1 + 2 * static_cast<std::size_t>(l * kComputeOps + o);
      per_op[static_cast<std::size_t>(o)] += 1e-9 * static_cast<double>(ns[i + 1] - ns[i]);
    }
  return per_op;
}

}  // namespace tpb
