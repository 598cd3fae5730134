// The results' `curve` section of a serve run over several loads (results/SCHEMA.md, "curve"):
// total tokens/s against p95 ITL as load grows, the free region, the knee and the memory wall.
// A figure that could not be had (an oom point's, a knee of too few points) is NaN -> null.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/serve/serve_metrics.h"

namespace tpb {

struct CurvePointRecord {
  double x = 0, total_tokens_per_s = 0, itl_p95_s = 0, ttft_p95_s = 0;
  std::string status;
  std::optional<CostPerMtok> cost_per_mtok;  // 1.25.0: the point's, with a price only
};

struct FreeRegionRecord {
  double upto = 0;  // the largest load of the region; NaN when even the lightest is outside
  double threshold = 0.10;
  std::string meaning;
};

struct KneeRecord {
  double x = 0;  // NaN: no knee found
  std::string method;
};

struct MemoryWallRecord {
  double x = 0;
  std::string reason;
};

// (1.22.0) With --slo: the largest load whose SLO attainment meets the target (harness/serve/
// curve.h); x null when even the lightest load missed, next_x null when no load did.
struct SloCapacityRecord {
  std::string slo;
  double target = 0.9;
  double x = 0, attainment = 0, goodput_requests_per_s = 0, goodput_per_gpu = 0;
  double next_x = 0, next_attainment = 0;
  std::optional<CostPerMtok> cost_per_mtok;  // 1.25.0: the point's at x, with a price only
  std::string meaning;
};

struct CurveRecord {
  std::string x;  // "concurrency" | "rate"
  std::vector<CurvePointRecord> points;
  FreeRegionRecord free_region;
  KneeRecord knee;
  std::optional<MemoryWallRecord> memory_wall;    // written as null when absent
  std::optional<SloCapacityRecord> slo_capacity;  // absent without --slo (before 1.22.0)
};

}  // namespace tpb
