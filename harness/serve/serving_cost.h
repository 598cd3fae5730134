// What a token costs on a serving point: a price per GPU-hour (--price GPU=USD_PER_HOUR, or a
// hardware profile's price_per_hour) over the tokens the point served per second.
// Pure arithmetic on the serve metrics, so the model backend and real ranks share it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/nullable.h"

namespace tpb {

// A price for one GPU type: US dollars per GPU-hour and where the figure comes from.
struct GpuPrice {
  std::string gpu;  // the hardware profile's name (h200-sxm)
  double usd_per_hour = 0;
  std::string source;  // "--price" | "hardware profile NAME: <the profile's source>"
};

// results.json's `cost_per_mtok` (results/SCHEMA.md, 1.25.0): US dollars per million tokens.
// A figure whose tokens/s is 0 (or unmeasured) is null with `reason`, never infinity.
struct CostPerMtok {
  Nullable<double> output_usd;  // per million output (generated) tokens
  Nullable<double> total_usd;   // per million total tokens: prompt + output
  int64_t gpus = 0;             // the point's world size: every rank is a GPU
  double usd_per_gpu_hour = 0;
  std::string gpu, price_source;
  std::optional<std::string> reason;  // why a figure is null
};

// USD per million tokens:  gpus * usd_per_hour / 3600 (USD per second of the point)
//                          / tokens_per_s * 1e6.
// e.g. 8 GPUs at $3.50/h serving 10,000 tokens/s: 8 * 3.5 / 3600 / 1e4 * 1e6 = $0.7778.
// nullopt when tokens_per_s is not a positive finite number (nothing served: no cost per token).
std::optional<double> usd_per_mtok(int64_t gpus, double usd_per_hour, double tokens_per_s);

// The point's cost per million output and total tokens, from its tokens/s (absent: unmeasured).
CostPerMtok cost_per_mtok(const GpuPrice& price, int64_t gpus,
                          std::optional<double> output_tokens_per_s,
                          std::optional<double> total_tokens_per_s);

// --price GPU=USD_PER_HOUR[,GPU=USD_PER_HOUR...]: throws BadInput naming --price for an empty
// GPU, a price that is not a finite number >= 0, or a GPU given twice.
std::vector<GpuPrice> parse_prices(const std::string& text);
// The canonical --price text of parsed prices (config echo).
std::string prices_text(const std::vector<GpuPrice>& prices);

// The price that applies to a point on hardware `hw_name`: the --price entry for it (a profile
// loaded as NAME:datasheet matches NAME), else the profile's own price, else none. Throws
// BadInput naming --price when prices were given and none is for `hw_name`.
std::optional<GpuPrice> price_for(const std::vector<GpuPrice>& given, const std::string& hw_name,
                                  const std::optional<GpuPrice>& profile_price);

}  // namespace tpb
