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
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace tpb
