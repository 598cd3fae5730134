// The requests of one serve point: arrivals and lengths, seeded so that every rank (and every
// rerun with the same seed) draws the same list.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/serve/length_dist.h"

namespace tpb {

struct Request {
  int64_t id = 0;
  double arrival_s = 0;  // open loop: when it arrives; closed loop: 0 (the client releases it)
  int64_t prompt_len = 1, output_len = 1;
};

// What the request went through, on the virtual clock (seconds): the fields its requests.jsonl
// line carries as they are (record/serve_log_record.h), save that a time never reached is -1
// here and null there.
struct RequestOutcome {
  int64_t id = 0;
  double arrival_s = 0, admitted_s = -1, first_token_s = -1, finish_s = -1;
  int64_t prompt_len = 0, output_len = 0;
  int64_t preemptions = 0;
  bool warmup = false;
  bool rejected = false;
  std::string reason;  // why it was rejected
};

struct LoadSpec {
  // Open loop: rate > 0 requests/s, inter-arrival gaps gamma(shape = burstiness, mean =
  // 1 / rate), as vLLM's benchmark draws them (burstiness 1 = Poisson). Closed loop:
  // concurrency > 0 and rate = 0; the scheduler's client keeps that many requests in flight.
  double rate = 0, burstiness = 1;
  int64_t concurrency = 0;
  int64_t requests = 64;
  int64_t warmup_requests = 0;  // the first ones, run but left out of the metrics
  LengthDist prompt, output;
  std::string trace_file;  // JSONL (arrival_s, prompt_len, output_len); replaces the above
  uint64_t seed = 1;
};

// warmup_requests + requests requests, ids 0.. in arrival order. With a trace: its first
// warmup_requests + requests lines (BadInput naming --requests when it holds fewer), its
// arrivals in an open loop whatever `rate` says, and arrival 0 in a closed loop.
std::vector<Request> make_requests(const LoadSpec& spec);

// One request per non-empty line: {"arrival_s": 0.5, "prompt_len": 128, "output_len": 64}.
// Throws BadInput naming the file and the line number for a malformed line, a missing or
// non-positive length, a negative arrival or arrivals out of order.
std::vector<Request> read_trace(const std::string& path);

}  // namespace tpb
