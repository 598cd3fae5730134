#include "harness/measure/calibrate.h"

#include <algorithm>
#include <stdexcept>

#include "layers/cost_model.h"
#include "layers/cpu/cpu_device.h"
#include "layers/fill_hash.h"

namespace tpb {

namespace {

// The probe's best-of timing (layers/cpu/cpu_device.h), after one untimed call (first-touch
// pages, BLAS/cuBLAS handles, clocks), with the device drained inside the timed region.
template <class F>
double best_of(Device& dev, int reps, F&& f) {
  f();
  dev.synchronize();
  return best_seconds(reps, [&] {
    f();
    dev.synchronize();
  });
}

struct Gemm {
  Op op;
  const char* name;
  int64_t n, k;
};

// Every token count on one GEMM's weights: several copies of W (together 4x the LLC), filled
// once and called in turn round-robin, so that W comes from memory as in a step (where every
// layer has its own weights) and not from a cache the last call warmed. A timed rep makes
// `walk` of those calls (64 MiB of W, at least one): each copy is still read again only after
// every other one, whatever the walk, and at m = 512 a rep over all copies took seconds (the
// whole table ~20 s of a calibrate). out[i] is ms[i]'s result.
std::vector<GemmShapeResult> time_gemm(Device& dev, const ModelShape& shape, int tp, DType t,
                                       const Gemm& g, const std::vector<int64_t>& ms, int reps,
                                       double llc_bytes) {
  const std::size_t w_bytes = static_cast<std::size_t>(g.n * g.k) * dtype_bytes(t);
  const int copies = static_cast<int>(
      std::clamp(4.0 * llc_bytes / static_cast<double>(w_bytes), 1.0, 64.0) + 0.999);
  const int walk = std::min(copies, static_cast<int>((64 << 20) / w_bytes) + 1);
  int next = 0;  // the copy the next call reads
  DeviceBuffer w = dev.alloc(w_bytes * copies);
  dev.fill(w.get(), t, whole_tensor_fill(2, 0.1f, g.n * copies, g.k));
  std::vector<GemmShapeResult> out;
  for (int64_t m : ms) {
    CostQuery q;
    q.shape = shape;
    q.phase = Phase::prefill;  // m tokens of one sequence: the GEMMs see exactly m rows
    q.batch = 1;
    q.prompt = m;
    q.tp = tp;
    q.dtype = t;
    const OpCost c = op_cost(q, g.op);
    // The cost model is the source of FLOPs and bytes; its dims must be the ones timed.
    if (c.flops != 2.0 * m * g.n * g.k)
      throw std::logic_error("calibrate: GEMM dims disagree with the cost model for " +
                             std::string(g.name));
    DeviceBuffer x = dev.alloc(static_cast<std::size_t>(m * g.k) * dtype_bytes(t));
    DeviceBuffer y = dev.alloc(static_cast<std::size_t>(m * g.n) * dtype_bytes(t));
    dev.fill(x.get(), t, whole_tensor_fill(1, 0.1f, m, g.k));
    const double s = best_of(dev, reps,
                             [&] {
                               for (int i = 0; i < walk; ++i, next = (next + 1) % copies)
                                 dev.gemm(x.get(), static_cast<char*>(w.get()) + next * w_bytes,
                                          y.get(), m, g.n, g.k, t);
                             }) /
                     walk;
    out.push_back({g.name, m, g.n, g.k, s, c.flops, c.bytes_read + c.bytes_written});
  }
  return out;
}

}  // namespace

// Results ordered by token count, then GEMM, as the table prints; timed GEMM by GEMM, so that
// each one's copies of W are filled once for all token counts.
std::vector<GemmShapeResult> measure_gemm_shapes(Device& dev, const ModelShape& shape, int tp,
                                                 DType t, const std::vector<int64_t>& ms, int reps,
                                                 double llc_bytes) {
  const ShardShape sh = shard_shape(shape, tp);
  const int64_t d = shape.head_dim, h = shape.hidden;
  const Gemm gemms[] = {{Op::qkv_proj, "qkv_proj", (sh.q_heads + 2 * sh.kv_heads) * d, h},
                        {Op::o_proj, "o_proj", h, sh.q_heads * d},
                        {Op::gate_up_proj, "gate_up_proj", 2 * sh.inter, h},
                        {Op::down_proj, "down_proj", h, sh.inter}};
  std::vector<std::vector<GemmShapeResult>> by_gemm;
  for (const Gemm& g : gemms)
    by_gemm.push_back(time_gemm(dev, shape, tp, t, g, ms, reps, llc_bytes));
  std::vector<GemmShapeResult> out;
  for (std::size_t i = 0; i < ms.size(); ++i)
    for (const auto& g : by_gemm) out.push_back(g[i]);
  return out;
}

DeviceOpsPeaks measure_device_ops(Device& dev, DType t, int64_t stream_bytes, int64_t gemm_dim,
                                  int reps) {
  DeviceOpsPeaks p;
  p.stream_bytes = stream_bytes;
  p.gemm_dim = gemm_dim;
  const int64_t count = stream_bytes / static_cast<int64_t>(dtype_bytes(t));
  {
    DeviceBuffer a = dev.alloc(static_cast<std::size_t>(count) * dtype_bytes(t));
    DeviceBuffer b = dev.alloc(static_cast<std::size_t>(count) * dtype_bytes(t));
    dev.fill(a.get(), t, whole_tensor_fill(3, 0.1f, 1, count));
    dev.fill(b.get(), t, whole_tensor_fill(4, 0.1f, 1, count));
    const double s = best_of(dev, reps, [&] { dev.add(a.get(), b.get(), count, t); });
    p.add_bw = 3.0 * static_cast<double>(count) * dtype_bytes(t) / s;  // x += y: 2 reads, 1 write
  }
  const int64_t n = gemm_dim;
  DeviceBuffer x = dev.alloc(static_cast<std::size_t>(n * n) * dtype_bytes(t));
  DeviceBuffer w = dev.alloc(static_cast<std::size_t>(n * n) * dtype_bytes(t));
  DeviceBuffer y = dev.alloc(static_cast<std::size_t>(n * n) * dtype_bytes(t));
  dev.fill(x.get(), t, whole_tensor_fill(5, 0.1f, n, n));
  dev.fill(w.get(), t, whole_tensor_fill(6, 0.1f, n, n));
  const double s = best_of(dev, reps, [&] { dev.gemm(x.get(), w.get(), y.get(), n, n, n, t); });
  p.gemm_flops = 2.0 * static_cast<double>(n) * n * n / s;
  return p;
}

AlphaBeta fit_alpha_beta(const std::vector<int64_t>& bytes, const std::vector<double>& seconds) {
  if (bytes.size() < 3 || bytes.size() != seconds.size())
    throw std::invalid_argument("fit_alpha_beta: needs >= 3 (size, time) pairs");
  std::vector<double> small(seconds.begin(), seconds.begin() + 3);
  std::sort(small.begin(), small.end());
  AlphaBeta ab;
  ab.alpha_s = small[1];
  const double t = seconds.back() - ab.alpha_s;
  ab.algbw = static_cast<double>(bytes.back()) / (t > 0 ? t : seconds.back());
  return ab;
}

}  // namespace tpb
