// The results' `curve` section of a serve run over several loads (results/SCHEMA.md, "curve"):
// total tokens/s against p95 ITL as load grows, the free region, the knee and the memory wall.
// A figure that could not be had (an oom point's, a knee of too few points) is NaN -> null.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace tpb {

struct CurvePointRecord {
  double x = 0, total_tokens_per_s = 0, itl_p95_s = 0, ttft_p95_s = 0;
  std::string status;
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

struct CurveRecord {
  std::string x;  // "concurrency" | "rate"
  std::vector<CurvePointRecord> points;
  FreeRegionRecord free_region;
  KneeRecord knee;
  std::optional<MemoryWallRecord> memory_wall;  // written as null when absent
};

}  // namespace tpb
