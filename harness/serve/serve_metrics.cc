// Serving metrics by vLLM's benchmark definitions (serve_metrics.h lists them).
#include "harness/serve/serve_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness/analysis/stats.h"
#include "harness/serve/scheduler.h"

namespace tpb {
namespace {

double ttft(const RequestLog& r) {
  return r.first_token_s - r.arrival_s;
}
double e2el(const RequestLog& r) {
  return r.finish_s - r.arrival_s;
}
// A single-token output has no time per output token; vLLM counts it as 0 for goodput.
double tpot(const RequestLog& r) {
  return r.output_len > 1 ? (e2el(r) - ttft(r)) / static_cast<double>(r.output_len - 1) : 0.0;
}
std::vector<double> gaps(const RequestLog& r) {
  std::vector<double> g;
  for (size_t i = 1; i < r.token_s.size(); ++i) g.push_back(r.token_s[i] - r.token_s[i - 1]);
  return g;
}

// A request with no gaps (one token) has no ITL to miss the SLO with.
bool meets(const RequestLog& r, const SloSpec& slo) {
  if (slo.ttft_s && ttft(r) > *slo.ttft_s) return false;
  if (slo.tpot_s && tpot(r) > *slo.tpot_s) return false;
  if (slo.e2el_s && e2el(r) > *slo.e2el_s) return false;
  if (slo.itl_p95_s) {
    const auto g = gaps(r);
    if (!g.empty() && percentile(g, 95) > *slo.itl_p95_s) return false;
  }
  return true;
}

double per_s(double amount, double duration) {
  return duration > 0 ? amount / duration : kNoValue;
}

}  // namespace

LatencyStats latency_stats(const std::vector<double>& v) {
  LatencyStats s;
  s.n = static_cast<int64_t>(v.size());
  if (v.empty()) {
    s.mean = s.p50 = s.p90 = s.p95 = s.p99 = s.max = kNoValue;
    s.std = kNoValue;
    return s;
  }
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.p50 = percentile(v, 50);
  s.p90 = percentile(v, 90);
  s.p95 = percentile(v, 95);
  s.p99 = percentile(v, 99);
  s.max = *std::max_element(v.begin(), v.end());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(v.size()));
  return s;
}

ServeMetrics serve_metrics(const std::vector<RequestLog>& logs, const SloSpec& slo) {
  ServeMetrics m;
  std::vector<double> ttfts, ttfts_admitted, tpots, itls, e2els, queues, decodes;
  double first_arrival = 0, last_finish = 0, out_tokens = 0, all_tokens = 0;
  int64_t good = 0;
  for (const RequestLog& r : logs) {
    if (r.warmup) continue;
    m.preemptions += r.preemptions;
    if (r.rejected) ++m.rejected;
    if (r.rejected || r.finish_s < 0) continue;
    first_arrival = m.completed == 0 ? r.arrival_s : std::min(first_arrival, r.arrival_s);
    last_finish = m.completed == 0 ? r.finish_s : std::max(last_finish, r.finish_s);
    ++m.completed;
    ttfts.push_back(ttft(r));
    ttfts_admitted.push_back(r.first_token_s - r.admitted_s);
    queues.push_back(r.admitted_s - r.arrival_s);
    decodes.push_back(r.finish_s - r.first_token_s);
    if (r.output_len > 1) tpots.push_back(tpot(r));
    const auto g = gaps(r);
    itls.insert(itls.end(), g.begin(), g.end());
    e2els.push_back(e2el(r));
    m.input_tokens += r.prompt_len;
    m.output_tokens += r.output_len;
    out_tokens += static_cast<double>(r.output_len);
    all_tokens += static_cast<double>(r.output_len + r.prompt_len);
    good += meets(r, slo) ? 1 : 0;
  }
  m.ttft_s = latency_stats(ttfts);
  m.ttft_admitted_s = latency_stats(ttfts_admitted);
  m.queue_s = latency_stats(queues);
  m.decode_s = latency_stats(decodes);
  m.tpot_s = latency_stats(tpots);
  m.itl_s = latency_stats(itls);
  m.e2el_s = latency_stats(e2els);
  m.duration_s = m.completed > 0 ? last_finish - first_arrival : kNoValue;
  m.output_tokens_per_s = per_s(out_tokens, m.duration_s);
  m.total_tokens_per_s = per_s(all_tokens, m.duration_s);
  m.request_throughput = per_s(static_cast<double>(m.completed), m.duration_s);
  if (slo.any()) {
    const double fraction =
        m.completed > 0 ? static_cast<double>(good) / static_cast<double>(m.completed) : kNoValue;
    m.goodput = Goodput{slo.text(), per_s(static_cast<double>(good), m.duration_s), fraction};
  }
  return m;
}

}  // namespace tpb
