// Drawing one serve point's requests: arrivals (open loop) and lengths, from one seed.
#include "harness/serve/workload.h"

#include <cmath>
#include <string>

#include "base/errors.h"
#include "harness/serve/serve_random.h"

namespace tpb {
namespace {

// Arrivals and lengths come from separate streams of the one seed, so a sweep over --rate keeps
// every request's lengths and only moves its arrival.
std::mt19937_64 stream(uint64_t seed, uint64_t which) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(which)};
  return std::mt19937_64(seq);
}

void check(const LoadSpec& s) {
  if (s.requests < 1)
    throw BadInput("--requests: must be >= 1 (got " + std::to_string(s.requests) + ")");
  if (s.warmup_requests < 0)
    throw BadInput("--warmup-requests: must be >= 0 (got " + std::to_string(s.warmup_requests) +
                   ")");
  if (s.concurrency < 0)
    throw BadInput("--concurrency: must be >= 0 (got " + std::to_string(s.concurrency) + ")");
  if (!(s.rate >= 0)) throw BadInput("--rate: must be >= 0 (got " + std::to_string(s.rate) + ")");
  if (s.concurrency > 0 && s.rate > 0)
    throw BadInput("--rate: a closed loop (--concurrency " + std::to_string(s.concurrency) +
                   ") has no arrival rate (got " + std::to_string(s.rate) + ")");
  // A trace brings its own arrivals; only drawn ones need a rate.
  if (s.concurrency == 0 && s.rate == 0 && s.trace_file.empty())
    throw BadInput("--rate: give a rate > 0 (inf: all at once) or a --concurrency > 0 (got 0)");
  if (!(s.burstiness > 0) || std::isinf(s.burstiness))
    throw BadInput("--burstiness: must be a finite number > 0 (got " +
                   std::to_string(s.burstiness) + ")");
}

std::vector<Request> from_trace(const LoadSpec& spec) {
  auto reqs = read_trace(spec.trace_file);
  const auto want = static_cast<size_t>(spec.requests + spec.warmup_requests);
  if (reqs.size() < want)
    throw BadInput("--requests: the trace " + spec.trace_file + " holds " +
                   std::to_string(reqs.size()) + " requests (got " + std::to_string(spec.requests) +
                   " + " + std::to_string(spec.warmup_requests) + " warm-up)");
  reqs.resize(want);
  // The closed-loop client releases requests itself; a trace's arrivals do not apply.
  if (spec.concurrency > 0)
    for (auto& r : reqs) r.arrival_s = 0;
  return reqs;
}

}  // namespace

std::vector<Request> make_requests(const LoadSpec& spec) {
  check(spec);
  if (!spec.trace_file.empty()) return from_trace(spec);
  auto lengths = stream(spec.seed, 0), arrivals = stream(spec.seed, 1);
  // Gamma(shape k, scale 1/(rate k)) has mean 1/rate and CV 1/sqrt(k): k = 1 is Poisson,
  // k < 1 burstier, k > 1 steadier (vLLM's --burstiness). The first request arrives at 0.
  const double k = spec.burstiness, scale = 1.0 / (spec.rate * k);
  const bool timed = spec.concurrency == 0 && std::isfinite(spec.rate);
  std::vector<Request> reqs;
  double t = 0;
  for (int64_t i = 0; i < spec.requests + spec.warmup_requests; ++i) {
    if (i > 0 && timed) t += draw_gamma(arrivals, k) * scale;
    Request r;
    r.id = i;
    r.arrival_s = t;
    r.prompt_len = spec.prompt.sample(lengths);
    r.output_len = spec.output.sample(lengths);
    reqs.push_back(r);
  }
  return reqs;
}

}  // namespace tpb
