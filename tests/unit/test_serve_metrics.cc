// Serving metrics pinned to hand-computed cases (vLLM's definitions; linear percentiles).
#include <gtest/gtest.h>

#include <cmath>

#include "base/errors.h"
#include "harness/serve/scheduler.h"
#include "harness/serve/serve_metrics.h"

namespace tpb {
namespace {

RequestLog log_of(int64_t id, double arrival, double admitted, std::vector<double> tokens,
                  int64_t prompt) {
  RequestLog r;
  r.id = id;
  r.arrival_s = arrival;
  r.admitted_s = admitted;
  r.prompt_len = prompt;
  r.output_len = static_cast<int64_t>(tokens.size());
  r.first_token_s = tokens.front();
  r.finish_s = tokens.back();
  r.token_s = std::move(tokens);
  return r;
}

// A: arrives 0, admitted 0.5, tokens at 1.0, 1.5, 2.5 (prompt 10)
//    ttft 1.0, ttft_admitted 0.5, e2el 2.5, tpot (2.5 - 1.0) / 2 = 0.75, gaps 0.5, 1.0
// B: arrives 1.0, admitted 1.0, tokens at 2.0, 2.2 (prompt 20)
//    ttft 1.0, ttft_admitted 1.0, e2el 1.2, tpot 0.2 / 1 = 0.2, gap 0.2
// E: arrives 2.0, admitted 2.5, one token at 3.0 (prompt 5): ttft 1.0, e2el 1.0, no tpot/gap
// plus a warm-up request and a rejected one, which must not count (but the rejection is told).
std::vector<RequestLog> logs() {
  auto a = log_of(0, 0.0, 0.5, {1.0, 1.5, 2.5}, 10);
  a.preemptions = 2;
  auto w = log_of(1, 0.0, 0.0, {9.0, 50.0}, 1000);
  w.warmup = true;
  w.preemptions = 7;
  auto b = log_of(2, 1.0, 1.0, {2.0, 2.2}, 20);
  RequestLog d;
  d.id = 3;
  d.arrival_s = 0.1;
  d.prompt_len = 100000;
  d.output_len = 5;
  d.rejected = true;
  auto e = log_of(4, 2.0, 2.5, {3.0}, 5);
  return {w, a, b, d, e};
}

TEST(ServeMetrics, HandComputedCase) {
  const auto m = serve_metrics(logs(), SloSpec{});
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.rejected, 1);
  EXPECT_EQ(m.preemptions, 2);                         // the warm-up's 7 left out
  EXPECT_DOUBLE_EQ(m.duration_s, 3.0);                 // last finish 3.0 - first arrival 0.0
  EXPECT_DOUBLE_EQ(m.output_tokens_per_s, 6.0 / 3.0);  // 3 + 2 + 1 tokens
  EXPECT_DOUBLE_EQ(m.total_tokens_per_s, (6.0 + 35.0) / 3.0);  // + prompts 10 + 20 + 5
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_EQ(m.ttft_s.n, 3);
  EXPECT_DOUBLE_EQ(m.ttft_s.mean, 1.0);
  EXPECT_DOUBLE_EQ(m.ttft_s.max, 1.0);
  EXPECT_DOUBLE_EQ(m.ttft_admitted_s.mean, (0.5 + 1.0 + 0.5) / 3);
  // vLLM's phases: queued 0.5, 0, 0.5 (admission - arrival); decoding 1.5, 0.2, 0 (last token
  // - first); each request's TTFT is its queue plus its prefill.
  EXPECT_EQ(m.queue_s.n, 3);
  EXPECT_DOUBLE_EQ(m.queue_s.mean, 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.queue_s.max, 0.5);
  EXPECT_NEAR(m.decode_s.mean, 1.7 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(m.decode_s.max, 1.5);
  EXPECT_NEAR(m.queue_s.mean + m.ttft_admitted_s.mean, m.ttft_s.mean, 1e-12);
  // tpot over the requests with more than one token: [0.75, 0.2]
  EXPECT_EQ(m.tpot_s.n, 2);
  EXPECT_DOUBLE_EQ(m.tpot_s.mean, 0.475);
  EXPECT_DOUBLE_EQ(m.tpot_s.p50, 0.475);
  EXPECT_DOUBLE_EQ(m.tpot_s.max, 0.75);
  // itl pooled over requests: sorted [0.2, 0.5, 1.0]; p95: h = 2 * 0.95 = 1.9 -> 0.5 + 0.9 * 0.5
  EXPECT_EQ(m.itl_s.n, 3);
  EXPECT_NEAR(m.itl_s.mean, 1.7 / 3, 1e-12);
  EXPECT_NEAR(m.itl_s.p50, 0.5, 1e-12);
  EXPECT_NEAR(m.itl_s.p95, 0.95, 1e-12);
  // e2el sorted [1.0, 1.2, 2.5]: p90: h = 1.8 -> 1.2 + 0.8 * 1.3 = 2.24
  EXPECT_NEAR(m.e2el_s.mean, 4.7 / 3, 1e-12);
  EXPECT_NEAR(m.e2el_s.p50, 1.2, 1e-12);
  EXPECT_NEAR(m.e2el_s.p90, 2.24, 1e-12);
  EXPECT_DOUBLE_EQ(m.e2el_s.max, 2.5);
  // population std of [1.0, 1.2, 2.5] about 4.7/3: sqrt((0.3211 + 0.1344 + 0.8711) / 3)
  // = sqrt(3.98 / 9) (deviations -1.7/3, -1.1/3, 2.8/3; squares 2.89 + 1.21 + 7.84 = 11.94 / 9)
  EXPECT_NEAR(m.e2el_s.std.value(), std::sqrt(11.94 / 27), 1e-12);
  EXPECT_EQ(m.input_tokens, 35);  // 10 + 20 + 5; the warm-up and the rejected left out
  EXPECT_EQ(m.output_tokens, 6);
  EXPECT_FALSE(m.goodput);
}

TEST(ServeMetrics, GoodputCountsRequestsMeetingEverySlo) {
  // ttft <= 1000 ms: all three. tpot <= 500 ms: A (750) fails, E (one token) passes.
  auto m = serve_metrics(logs(), parse_slo("ttft=1000,tpot=500"));
  ASSERT_TRUE(m.goodput);
  EXPECT_EQ(m.goodput->slo, "ttft=1000,tpot=500");
  EXPECT_DOUBLE_EQ(m.goodput->fraction, 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.goodput->requests_per_s, 2.0 / 3.0);
  // A's own p95 ITL over [0.5, 1.0]: 0.5 + 0.95 * 0.5 = 0.975 s > 0.6; B's 0.2 passes.
  m = serve_metrics(logs(), parse_slo("itl_p95=600"));
  EXPECT_DOUBLE_EQ(m.goodput->fraction, 2.0 / 3);
  m = serve_metrics(logs(), parse_slo("itl_p95=980"));
  EXPECT_DOUBLE_EQ(m.goodput->fraction, 1.0);
  m = serve_metrics(logs(), parse_slo("ttft=999"));  // every ttft is 1000 ms
  EXPECT_DOUBLE_EQ(m.goodput->fraction, 0.0);
  // e2el [2.5, 1.2, 1.0] s: 1250 ms keeps B and E, A fails it.
  m = serve_metrics(logs(), parse_slo("e2el=1250"));
  EXPECT_DOUBLE_EQ(m.goodput->fraction, 2.0 / 3);
  m = serve_metrics(logs(), parse_slo("e2el=1100,tpot=500"));  // B (1.2 s) fails e2el: only E
  EXPECT_DOUBLE_EQ(m.goodput->fraction, 1.0 / 3);
}

TEST(ServeMetrics, NoMeasuredRequestsGiveNaN) {
  auto only_warmup = logs();
  for (auto& r : only_warmup) r.warmup = true;
  for (const auto& set : {std::vector<RequestLog>{}, only_warmup}) {
    const auto m = serve_metrics(set, parse_slo("ttft=100"));
    EXPECT_EQ(m.completed, 0);
    EXPECT_EQ(m.ttft_s.n, 0);
    for (const double v : {m.ttft_s.mean, m.ttft_s.p50, m.ttft_s.p99, m.ttft_s.max, m.itl_s.p95,
                           m.tpot_s.mean, m.e2el_s.p90, m.duration_s, m.output_tokens_per_s,
                           m.request_throughput, m.goodput->fraction, m.goodput->requests_per_s})
      EXPECT_TRUE(std::isnan(v));
  }
}

TEST(ServeMetrics, LatencyStatsInterpolateLinearly) {
  // sorted [1, 2, 3, 4]: p50 h = 1.5 -> 2.5; p90 h = 2.7 -> 3.7; p99 h = 2.97 -> 3.97
  const auto s = latency_stats({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_DOUBLE_EQ(s.p95, 3.85);
  EXPECT_DOUBLE_EQ(s.p99, 3.97);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_TRUE(std::isnan(latency_stats({}).p50));
}

TEST(ServeSlo, ParsesMillisecondsAndNamesBadKeys) {
  const auto slo = parse_slo("ttft=200,tpot=50,itl_p95=30.5");
  EXPECT_DOUBLE_EQ(*slo.ttft_s, 0.2);
  EXPECT_DOUBLE_EQ(*slo.tpot_s, 0.05);
  EXPECT_DOUBLE_EQ(*slo.itl_p95_s, 0.0305);
  EXPECT_EQ(slo.text(), "ttft=200,tpot=50,itl_p95=30.5");
  EXPECT_FALSE(parse_slo("").any());
  try {
    parse_slo("ttft=200,e2e=900");
    FAIL() << "no throw";
  } catch (const BadInput& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("--slo: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("'e2e'"), std::string::npos) << msg;
  }
  // A time may carry its unit; bare numbers stay milliseconds, and the echo is in ms.
  const auto units = parse_slo("ttft=1.5s,tpot=50ms,e2el=2000");
  EXPECT_DOUBLE_EQ(*units.ttft_s, 1.5);
  EXPECT_DOUBLE_EQ(*units.tpot_s, 0.05);
  EXPECT_EQ(units.text(), "ttft=1500,tpot=50,e2el=2000");
  for (const char* bad :
       {"ttft", "ttft=", "ttft=-1", "ttft=0", "ttft=1parsec", "ttft=-2ms", "ttft=1,ttft=2", ","})
    EXPECT_THROW(parse_slo(bad), BadInput) << bad;
}

TEST(ServeSlo, GoodputIsVllmsSpellingOfTheSameSlo) {
  const auto g = parse_goodput("ttft:200  tpot:50 e2el:1500");
  EXPECT_EQ(g.text(), "ttft=200,tpot=50,e2el=1500");
  EXPECT_EQ(parse_slo(g.text()).text(), g.text());
  for (const char* bad :
       {"", "ttft=200", "itl_p95:5", "ttft:", "ttft:-1", "ttft:1 ttft:2", "e2e:9"}) {
    try {
      parse_goodput(bad);
      ADD_FAILURE() << "no throw: " << bad;
    } catch (const BadInput& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--goodput: ", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace tpb
