// The throughput-vs-latency curve over a serve sweep's loads (concurrency or rate).
//   free region: the loads whose p95 ITL is within `threshold` (0.10) of the lightest load's
//                ("upto" is the largest such load; the loads are taken in increasing order and
//                the region ends at the first load outside it).
//   knee:        Kneedle (Satopaa et al. 2011) on total tokens/s against load, both normalised to
//                [0, 1]: the load of the largest difference curve y_n - x_n (concave, rising);
//                null with fewer than 3 ok points or no positive difference.
//   memory wall: the first load whose KV cache was full with requests waiting or preempted, or
//                whose point did not fit (status oom).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace tpb {

struct CurveInput {
  double x = 0;  // the load
  double total_tokens_per_s = 0, itl_p95_s = 0, ttft_p95_s = 0;
  std::string status;               // "ok" | "oom" | ...
  bool kv_full_with_queue = false;  // kv was full at some step with waiting > 0 or preemptions
  std::string kv_reason;            // the figures behind it, for memory_wall.reason
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
};

Curve make_curve(const std::string& x_name, std::vector<CurveInput> points,
                 double free_threshold = 0.10);

}  // namespace tpb
