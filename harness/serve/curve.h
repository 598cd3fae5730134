// The throughput-vs-latency curve over a serve sweep's loads (concurrency or rate).
//   free region: the loads whose p95 ITL is within `threshold` (0.10) of the lightest load's
//                ("upto" is the largest such load; the loads are taken in increasing order and
//                the region ends at the first load outside it).
//   knee:        Kneedle (Satopaa et al. 2011) on total tokens/s against load, both normalised to
//                [0, 1]: the load of the largest difference curve y_n - x_n (concave, rising);
//                null with fewer than 3 ok points or no positive difference.
//   memory wall: the first load whose KV cache was full with requests waiting or preempted, or
//                whose point did not fit (status oom).
//   SLO capacity: with --slo, the largest load, in increasing order up to the first that misses,
//                whose SLO attainment (the fraction of requests meeting every SLO: goodput's
//                fraction) is at least the target, 90% (DistServe's goodput, Zhong et al. 2024);
//                the first load that misses bounds it from above.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/serve/serve_metrics.h"

namespace tpb {

struct CurveInput {
  double x = 0;  // the load
  double total_tokens_per_s = 0, itl_p95_s = 0, ttft_p95_s = 0;
  std::string status;                    // "ok" | "oom" | ...
  bool kv_full_with_queue = false;       // kv was full at some step with waiting > 0 or preemptions
  std::string kv_reason;                 // the figures behind it, for memory_wall.reason
  std::optional<double> slo_attainment;  // goodput's fraction; absent without --slo
  double goodput_rps = 0;                // requests/s meeting every SLO
  int64_t gpus = 0;                      // the point's ranks
  std::optional<CostPerMtok> cost;       // the point's cost per million tokens, with a price
};

struct SloCapacity {
  double target = 0.9;
  std::optional<double> x;  // absent: even the lightest load missed
  double attainment = 0, goodput_rps = 0, goodput_per_gpu = 0;  // at x
  std::optional<CostPerMtok> cost;                              // at x, with a price
  std::optional<double> next_x;  // the first load that missed; absent: none did
  double next_attainment = 0;
};

struct Curve {
  std::string x;  // "concurrency" | "rate"
  std::vector<CurveInput> points;
  double free_threshold = 0.10;
  std::optional<double> free_upto;
  std::optional<double> knee_x;
  std::string knee_method = "kneedle (Satopaa et al. 2011), normalised, concave increasing";
  std::optional<double> wall_x;
  std::string wall_reason;
  std::optional<SloCapacity> slo;  // with --slo only
};

Curve make_curve(const std::string& x_name, std::vector<CurveInput> points,
                 double free_threshold = 0.10);

}  // namespace tpb
