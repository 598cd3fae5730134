// The custom all-reduce's cost, from the kernels' own reads (csrc/custom_all_reduce.cuh,
// cross_device_reduce_1stage and _2stage): no ring, no protocol, one launch whose barriers
// (a flag written to every peer and polled) and first P2P round trip make its latency. The
// latencies and efficiencies are the preset's (configs/topologies/, custom_allreduce), each
// with the published figures it was fitted to.
#include "collectives/model/custom_allreduce.h"

#include "base/errors.h"

namespace tpb {

namespace {

// vLLM's one-shot limits on full NVLink (custom_all_reduce.cuh: bytes < 512 * 1024 up to 4
// ranks, < 256 * 1024 up to 8).
constexpr int64_t kOneShotBelowTo4 = 512 * 1024, kOneShotBelowTo8 = 256 * 1024;

}  // namespace

bool custom_group_size(int ranks) {
  return ranks == 2 || ranks == 4 || ranks == 6 || ranks == 8;
}

CustomShot engine_shot(int ranks, int64_t bytes) {
  if (ranks == 2) return CustomShot::one;
  if ((ranks <= 4 && bytes < kOneShotBelowTo4) || (ranks <= 8 && bytes < kOneShotBelowTo8))
    return CustomShot::one;
  return CustomShot::two;
}

bool engine_takes_custom(const Fabric& f, int ranks, int nodes, int64_t bytes) {
  return f.custom_ar && nodes == 1 && custom_group_size(ranks) &&
         bytes < f.custom_ar->max_for(ranks);
}

CustomTime custom_time(const CustomAllReduce& c, double line_GBps, CustomShot shot, int ranks) {
  const CustomKernel& k = shot == CustomShot::one ? c.oneshot : c.twoshot;
  const double bw = line_GBps * k.p2p_efficiency;
  const double n = ranks;
  return {k.latency_us, shot == CustomShot::one ? bw / (n - 1) : bw * n / (2 * (n - 1))};
}

ModelTime eager_call(const Fabric& f, ModelTime t, int64_t bytes) {
  if (t.proto != ModelProto::p2p) return t;
  if (!f.custom_ar || !f.custom_ar->eager_copy)
    throw BadInput("--eager: topology '" + f.name +
                   "' does not model an eager call's copy (no custom_allreduce.eager_copy)");
  const CustomAllReduce::EagerCopy& c = *f.custom_ar->eager_copy;
  const double copy_data_s = 2.0 * static_cast<double>(bytes) / (c.hbm_GBps * 1e9);
  t.latency_s += c.latency_us * 1e-6;
  t.time_s += c.latency_us * 1e-6 + copy_data_s;
  if (bytes > 0) t.algbw_GBps = static_cast<double>(bytes) / (t.time_s - t.latency_s) / 1e9;
  return t;
}

}  // namespace tpb
