// The block's layout is vLLM's: a 50-wide '=' title, "{:<40} {:<10}" rows (two decimals for
// rates and times), a 50-wide '-' header per latency with Mean, Median and P99 (vLLM's default
// --metric-percentiles 99; it prints E2EL when asked, tpbench always), and a '=' rule.
// "Failed requests" holds tpbench's rejected requests, the ones never served.
#include "harness/report/serve/vllm_summary.h"

#include <fmt/format.h>

#include <cmath>

namespace tpb {

namespace {

void row(std::string& s, const std::string& label, double v) {
  s += fmt::format("{:<40} {:<10.2f}\n", label, v);
}
void row(std::string& s, const std::string& label, int64_t v) {
  s += fmt::format("{:<40} {:<10}\n", label, v);
}

void latency(std::string& s, const char* header, const char* name,
             const std::optional<LatencyStats>& l) {
  if (!l) return;
  s += fmt::format("{:-^50}\n", header);
  row(s, fmt::format("Mean {} (ms):", name), l->mean * 1e3);
  row(s, fmt::format("Median {} (ms):", name), l->p50 * 1e3);
  row(s, fmt::format("P99 {} (ms):", name), l->p99 * 1e3);
}

}  // namespace

std::string format_vllm_summary(const PointRecord& p) {
  if (!p.metrics || !p.metrics->ttft_s || !p.serve || !p.params.serve) return "";
  const MetricsRecord& m = *p.metrics;
  const ServeRunRecord& r = *p.serve;
  const ServeParamsRecord& load = *p.params.serve;
  std::string s = fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  row(s, "Successful requests:", r.requests_completed);
  row(s, "Failed requests:", r.requests_rejected);
  if (load.concurrency) row(s, "Maximum request concurrency:", *load.concurrency);
  if (load.rate) row(s, "Request rate configured (RPS):", *load.rate);
  row(s, "Benchmark duration (s):", r.duration_s);
  if (r.input_tokens) row(s, "Total input tokens:", *r.input_tokens);
  if (r.output_tokens) row(s, "Total generated tokens:", *r.output_tokens);
  row(s, "Request throughput (req/s):", m.request_throughput.value_or(NAN));
  if (m.goodput) row(s, "Request goodput (req/s):", m.goodput->requests_per_s);
  row(s, "Output token throughput (tok/s):", m.output_tokens_per_s.value_or(NAN));
  row(s, "Total token throughput (tok/s):", m.total_tokens_per_s.value_or(NAN));
  latency(s, "Time to First Token", "TTFT", m.ttft_s);
  latency(s, "Time per Output Token (excl. 1st token)", "TPOT", m.tpot_s);
  latency(s, "Inter-token Latency", "ITL", m.itl_s);
  latency(s, "End-to-end Latency", "E2EL", m.e2el_s);
  return s + std::string(50, '=') + "\n";
}

}  // namespace tpb
