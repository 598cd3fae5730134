// Serving metrics from request logs, by vLLM's benchmark definitions and names
// (results/SCHEMA.md states each, with the percentile method: linear interpolation, numpy's
// default). Warm-up and rejected requests are left out; times are on the virtual clock.
//   ttft   = first_token - arrival               (ttft_admitted: first_token - admitted)
//   tpot   = (e2el - ttft) / (output_len - 1)     per request with output_len > 1
//   itl    = every gap between consecutive tokens of every request, pooled
//   e2el   = finish - arrival
//   duration = last finish - first arrival of the measured requests
//   output_tokens_per_s = sum output_len / duration; total adds prompt_len
//   request_throughput  = completed / duration
//   goodput: completed requests meeting every SLO given (ttft, tpot, e2el per request; itl_p95:
//   the request's own p95 ITL), per second and as a fraction of completed.
//   std = the population standard deviation (numpy's np.std, ddof 0, as vLLM reports it).
//   cost per million tokens (serving_cost.cc, 1.25.0): a price per GPU-hour (--price, or the
//   hardware profile's price_per_hour) over the tokens served per second; arithmetic on the
//   metrics above, so the model backend and real ranks share it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/nullable.h"

namespace tpb {

struct RequestLog;  // harness/serve/scheduler.h

// A latency distribution over requests or token gaps, seconds, as results.json's serve metrics
// hold it (record/point_record.h): NaN everywhere (null in results) when n = 0.
struct LatencyStats {
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
  int64_t n = 0;
  std::optional<double> std;  // always set here; absent in results written before 1.13.0
};

struct SloSpec {
  std::optional<double> ttft_s, tpot_s, itl_p95_s, e2el_s;
  bool any() const { return ttft_s || tpot_s || itl_p95_s || e2el_s; }
  std::string text() const;  // "ttft=200,tpot=50" in ms, as given
};
// --slo ttft=MS,tpot=MS,itl_p95=MS,e2el=MS; throws BadInput naming --slo and the key.
SloSpec parse_slo(const std::string& text);
// vLLM's --goodput "ttft:MS tpot:MS e2el:MS" (space-separated KEY:MS, vLLM's three keys only);
// throws BadInput naming --goodput.
SloSpec parse_goodput(const std::string& text);

// The point's goodput, as computed and as results.json holds it.
struct Goodput {
  std::string slo;
  double requests_per_s = 0, fraction = 0;
};

struct ServeMetrics {
  LatencyStats ttft_s, ttft_admitted_s, tpot_s, itl_s, e2el_s;
  // vLLM's request phases (its queued_time and decode_time; ttft_admitted_s is its
  // prefill_time): admission - arrival, and the last token - the first.
  LatencyStats queue_s, decode_s;
  double output_tokens_per_s = 0, total_tokens_per_s = 0, request_throughput = 0;
  double duration_s = 0;
  int64_t completed = 0, rejected = 0, preemptions = 0;
  int64_t input_tokens = 0, output_tokens = 0;  // sums over the completed requests
  std::optional<Goodput> goodput;               // only with SLOs
};

LatencyStats latency_stats(const std::vector<double>& v);
ServeMetrics serve_metrics(const std::vector<RequestLog>& logs, const SloSpec& slo);

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
