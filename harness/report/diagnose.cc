// Diagnosis in the order the source article teaches: (1) identify the regime, (2) batch and
// memory, (3) the ITL distribution, (4) host overhead, then TP balance, and (5) kernels last.
// Thresholds are stated in each message so a reader can disagree with them.
#include "harness/report/diagnose.h"

#include <fmt/format.h>

#include <algorithm>

#include "harness/record/json_number.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

}  // namespace

std::vector<Verdict> diagnose_point(const oj& p) {
  std::vector<Verdict> v;
  if (p.value("status", "") != "ok") return v;
  const oj& m = p["metrics"];
  const bool decode = p["params"]["phase"] == "decode";
  const double mfu = json_number(m, "mfu"), ceil = json_number(m, "mfu_ceiling"),
               mbu = json_number(m, "mbu");
  const double occ = json_number(m, "occupancy_sampled");

  // 1. Regime.
  const bool below_ridge = json_number(m, "intensity") < json_number(m, "ridge");
  if (decode && below_ridge) {
    const bool near_ceiling = ceil > 0 && mfu >= 0.5 * ceil;
    v.push_back(
        {1, "regime", mbu >= 0.5 ? "ok" : "note",
         fmt::format("decode is bandwidth-bound (intensity {:.2f} FLOP/B vs ridge {:.1f}): MFU "
                     "{:.4f} against a ceiling of {:.4f} is {}; judge it by MBU {:.2f} and "
                     "{:.1f} tokens/s{}",
                     json_number(m, "intensity"), json_number(m, "ridge"), mfu, ceil,
                     near_ceiling ? "as good as this batch allows" : "below half its ceiling", mbu,
                     json_number(m, "tokens_per_s"),
                     mbu < 0.5 ? " (MBU under 0.5: bandwidth is being lost)" : "")});
  } else {
    v.push_back(
        {1, "regime", mfu >= 0.4 ? "ok" : "problem",
         fmt::format("{} is compute-bound (intensity {:.0f} FLOP/B vs ridge {:.1f}, "
                     "ceiling {:.2f}): MFU {:.3f}{}",
                     decode ? "decode at this batch" : "prefill", json_number(m, "intensity"),
                     json_number(m, "ridge"), ceil, mfu,
                     mfu < 0.4 ? " is low for this regime: check kernels, sequence length and "
                                 "padding"
                               : "")});
  }
  v.push_back({1, "regime", occ - mbu > 0.5 ? "note" : "ok",
               fmt::format("occupancy {:.2f} vs MBU {:.2f} vs MFU {:.4f}: occupancy counts waiting "
                           "and small kernels as busy; it is not efficiency",
                           occ, mbu, mfu)});

  // 3. ITL distribution (per-step time): spikes vs uniformly slow.
  const oj& st = m["step_time_s"];
  const double p50 = json_number(st, "p50"), p99 = json_number(st, "p99"),
               mx = json_number(st, "max");
  if (p50 > 0) {
    const bool spiky = p99 > 1.5 * p50;
    v.push_back(
        {3, "itl", spiky ? "problem" : "ok",
         fmt::format("step time p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms: {}", p50 * 1e3,
                     p99 * 1e3, mx * 1e3,
                     spiky ? "steady steps with spikes (p99 > 1.5x p50): interference "
                             "(prefill, jitter, a noisy neighbour), not a bandwidth limit"
                           : "uniform; a slow but steady step is a bandwidth limit, not a bug")});
  }

  // 4. Host overhead.
  const double gap = json_number(m, "host_gap_fraction");
  v.push_back({4, "host", gap > 0.1 ? "problem" : "ok",
               fmt::format("host gap {:.1f}% of wall (no device work in flight){}", 100 * gap,
                           gap > 0.1 ? ": host-side work is comparable to device work; batch it or "
                                       "capture the step in a graph"
                                     : "")});

  // Balance across TP ranks: high occupancy with low throughput.
  const oj& c = p["collectives"];
  const oj& s = p["straggler"];
  const double wait = json_number(c, "wait_fraction");
  if (json_number(c, "count") > 0) {
    const double excess = json_number(s, "excess_compute_fraction");
    const bool imbalanced = wait > 0.1 && excess > 0.05;
    v.push_back(
        {4, "balance", imbalanced ? "problem" : (wait > 0.1 ? "note" : "ok"),
         fmt::format("ranks wait {:.1f}% of wall in collectives (skew p95 {:.0f} us); "
                     "rank {} arrived last in {:.0f}% of them with {:+.1f}% compute vs the "
                     "group median{}",
                     100 * wait, json_number(c["skew_s"], "p95") * 1e6, s["rank"].get<int>(),
                     100 * json_number(s, "arrived_last_share"), 100 * excess,
                     imbalanced ? ": a straggler; check its clocks, memory pressure and "
                                  "placement before anything else"
                                : "")});
  }

  // 5. Kernels last: the op that takes the most time, and its own bandwidth.
  if (p.contains("ops") && !p["ops"].empty()) {
    const oj* top = nullptr;
    for (const auto& o : p["ops"])
      if (!o["op"].get<std::string>().starts_with("allreduce") &&
          (!top || json_number(o, "time_s_per_step") > json_number(*top, "time_s_per_step")))
        top = &o;
    if (top)
      v.push_back(
          {5, "kernels", "note",
           fmt::format("largest compute op: {} at {:.1f}% of the step, MBU {:.2f} on its "
                       "own bytes",
                       (*top)["op"].get<std::string>(), 100 * json_number(*top, "share_of_step"),
                       json_number(*top, "mbu"))});
  }
  for (const auto& w : p.value("warnings", oj::array()))
    v.push_back({0, "measurement", "note", w.get<std::string>()});
  std::stable_sort(v.begin(), v.end(),
                   [](const Verdict& a, const Verdict& b) { return a.order < b.order; });
  return v;
}

std::vector<Verdict> diagnose_sweep(const oj& points) {
  std::vector<Verdict> v;
  // 2. Batch and memory: the memory-exhaustion point caps the batch.
  for (const auto& p : points)
    if (p.value("status", "") == "oom") {
      v.push_back(
          {2, "memory", "note",
           fmt::format("batch {} does not fit ({}): memory, not compute, sets the largest "
                       "batch; shrink the KV cache (shorter context, fewer bytes per element)",
                       p["params"]["batch"].get<long long>(), p.value("reason", ""))});
      break;
    }
  // The knee: where adding batch stops adding tokens/s faster than it adds latency.
  std::vector<const oj*> dec;
  for (const auto& p : points)
    if (p.value("status", "") == "ok" && p["params"]["phase"] == "decode") dec.push_back(&p);
  std::sort(dec.begin(), dec.end(), [](const oj* a, const oj* b) {
    return (*a)["params"]["batch"].get<long long>() < (*b)["params"]["batch"].get<long long>();
  });
  for (std::size_t i = 1; i < dec.size(); ++i) {
    const double tput = json_number((*dec[i])["metrics"], "tokens_per_s") /
                        json_number((*dec[i - 1])["metrics"], "tokens_per_s");
    const double lat = json_number((*dec[i])["metrics"]["step_time_s"], "p95") /
                       json_number((*dec[i - 1])["metrics"]["step_time_s"], "p95");
    if (lat > 1.0 && tput / lat < 1.2) {
      v.push_back(
          {2, "knee", "note",
           fmt::format("knee near batch {}: going to batch {} multiplies tokens/s by {:.2f} "
                       "but p95 step time by {:.2f}",
                       (*dec[i - 1])["params"]["batch"].get<long long>(),
                       (*dec[i])["params"]["batch"].get<long long>(), tput, lat)});
      break;
    }
  }
  return v;
}

oj verdicts_to_json(const std::vector<Verdict>& v) {
  oj a = oj::array();
  for (const auto& x : v)
    a.push_back({{"order", x.order}, {"topic", x.topic}, {"level", x.level}, {"text", x.text}});
  return a;
}

std::string format_verdicts(const std::vector<Verdict>& v) {
  std::string out;
  for (const auto& x : v)
    out += fmt::format("  [{}] {:<8} {:<11} {}\n", x.order, x.level, x.topic, x.text);
  return out;
}

}  // namespace tpb
