// The logs are read by the names the point's serve record gives (serve.steps_file and
// serve.requests_file, rows tagged with their point), so a sweep of loads replays each point
// from its own rows.
#include "harness/record/whatif/serve_replay.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/errors.h"
#include "harness/serve/simulate.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

// The rows of the JSONL `name` (in `dir`) whose "point" is `point`.
std::vector<oj> rows_of(const std::string& dir, const std::string& name, int point,
                        const std::string& field) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::ifstream in(path);
  if (!in) throw BadInput(field + ": cannot read " + path);
  std::vector<oj> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    oj row = oj::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object())
      throw BadInput(field + ": " + path + " line " + std::to_string(line_no) + " is not JSON");
    if (row.value("point", -1) == point) out.push_back(std::move(row));
  }
  return out;
}

double num(const oj& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

std::optional<double> opt_num(const oj& j, const char* key) {
  const double v = num(j, key);
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// A count in a request row: a whole number from `lo` to 2^53 (beyond it a double no longer
// holds every whole number), else BadInput naming the row and the key: a row edited by hand
// must not reach the scheduler as a wrapped or truncated length.
int64_t row_count(const oj& r, const char* key, int64_t lo, const std::string& where) {
  const oj* v = r.contains(key) ? &r[key] : nullptr;
  const double x = v && v->is_number() ? v->get<double>() : NAN;
  if (!(x >= static_cast<double>(lo) && x <= 9007199254740992.0 && x == std::floor(x)))
    throw BadInput(where + ": \"" + key + "\" must be a whole number >= " + std::to_string(lo) +
                   " (got " + (v ? v->dump() : "nothing") + ")");
  return static_cast<int64_t>(x);
}

SchedulerConfig config_of(const oj& s) {
  SchedulerConfig c;
  c.kind = s.value("scheduler", "continuous") == "static" ? SchedulerKind::static_batch
                                                          : SchedulerKind::continuous;
  c.max_running = s.value("max_batch", int64_t{8});
  c.chunk = s.value("chunk", int64_t{0});
  c.max_step_tokens = s.value("max_step_tokens", int64_t{0});
  c.block_tokens = s.value("block_tokens", int64_t{16});
  c.kv_blocks = s.value("kv_capacity_tokens", int64_t{0}) / std::max<int64_t>(c.block_tokens, 1);
  c.max_ctx = c.kv_blocks * c.block_tokens;  // as the drivers set it
  c.concurrency = s.contains("concurrency") && s["concurrency"].is_number()
                      ? s["concurrency"].get<int64_t>()
                      : 0;
  return c;
}

WhatifFigures measured_figures(const oj& m) {
  WhatifFigures f;
  f.tokens_per_s = opt_num(m, "output_tokens_per_s");
  if (m.contains("ttft_s")) f.ttft_p95_s = opt_num(m["ttft_s"], "p95");
  if (m.contains("itl_s")) {
    f.itl_p50_s = opt_num(m["itl_s"], "p50");
    f.itl_p95_s = opt_num(m["itl_s"], "p95");
    f.itl_p99_s = opt_num(m["itl_s"], "p99");
  }
  if (m.contains("goodput") && m["goodput"].is_object())
    f.goodput = opt_num(m["goodput"], "requests_per_s");
  return f;
}

void read_logs(const oj& point, int index, const std::string& dir, ServeReplayBase& b) {
  const oj& rec = point.at("serve");
  const std::string field = "points[" + std::to_string(index) + "].serve";
  const std::string requests = field + ".requests_file";
  for (const oj& r : rows_of(dir, rec.value("requests_file", "requests.jsonl"), index, requests)) {
    const std::string where = requests + " row " + std::to_string(b.requests.size());
    Request q;
    q.id = row_count(r, "id", 0, where);
    q.arrival_s = b.cfg.concurrency > 0 ? 0.0 : num(r, "arrival_s");
    q.prompt_len = row_count(r, "prompt_len", 1, where);
    q.output_len = row_count(r, "output_len", 1, where);
    b.warmup += r.value("warmup", false) ? 1 : 0;
    b.requests.push_back(q);
  }
  std::sort(b.requests.begin(), b.requests.end(),
            [](const Request& a, const Request& c) { return a.id < c.id; });
  for (std::size_t i = 1; i < b.requests.size(); ++i)
    if (b.requests[i].id == b.requests[i - 1].id)
      throw BadInput(requests + ": request id " + std::to_string(b.requests[i].id) +
                     " given twice");
  for (const oj& r :
       rows_of(dir, rec.value("steps_file", "steps.jsonl"), index, field + ".steps_file")) {
    MeasuredStep s{num(r, "duration_s"),
                   num(r, "device_time_s"),
                   r.value("prefill_tokens", int64_t{-1}),
                   r.value("decode_tokens", int64_t{-1}),
                   {},
                   {},
                   {}};
    for (const oj& k : r.value("ranks", oj::array())) {
      s.rank_compute_s.push_back(num(k, "compute_s"));
      s.rank_transfer_s.push_back(num(k, "transfer_s"));
      if (k.contains("host_s")) s.rank_host_s.push_back(num(k, "host_s"));
    }
    // A log older than 1.21.0 has no host time per rank: none for any rank, so none is scaled
    if (s.rank_host_s.size() != s.rank_compute_s.size()) s.rank_host_s.clear();
    b.steps.push_back(std::move(s));
  }
}

}  // namespace

WhatifFigures replay_serve(const ServeReplayBase& base, const SchedulerConfig& cfg,
                           const std::function<double(const StepPlan&, std::size_t)>& duration,
                           int64_t* preemptions) {
  Scheduler s(cfg, base.requests, base.warmup);
  std::size_t k = 0;
  simulate(s, [&](const StepPlan& p) { return duration(p, k++); });
  const ServeMetrics m = serve_metrics(s.logs(), base.slo);
  std::vector<double> gaps;  // pooled as serve_metrics pools them: measured requests only
  for (const RequestLog& r : s.logs())
    if (!r.warmup && !r.rejected)
      for (std::size_t i = 1; i < r.token_s.size(); ++i)
        gaps.push_back(r.token_s[i] - r.token_s[i - 1]);
  if (preemptions) *preemptions = s.preemptions();
  auto stat = [](const LatencyStats& st, double v) {
    return st.n > 0 && std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
  };
  WhatifFigures f;
  f.tokens_per_s = m.duration_s > 0 ? std::optional<double>(m.output_tokens_per_s) : std::nullopt;
  f.ttft_p95_s = stat(m.ttft_s, m.ttft_s.p95);
  f.itl_p50_s = stat(m.itl_s, m.itl_s.p50);
  f.itl_p95_s = stat(m.itl_s, m.itl_s.p95);
  f.itl_p99_s = stat(m.itl_s, m.itl_s.p99);
  if (m.goodput) f.goodput = m.goodput->requests_per_s;
  f.itl_quantiles_s = itl_quantiles(gaps);
  return f;
}

std::string rebuild_serve_point(const oj& point, int index, const std::string& dir,
                                ServeReplayBase& b) {
  const oj& sp = point.at("params").at("serve");
  b.cfg = config_of(sp);
  b.slo = parse_slo(sp.value("slo", ""));
  if (!point.contains("serve") || !point["serve"].is_object())
    return "the point has no serve record (its step and request logs)";
  read_logs(point, index, dir, b);
  b.measured = measured_figures(point.at("metrics"));
  if (b.steps.empty() || b.requests.empty())
    return "the step or request log has no rows for this point";
  for (const MeasuredStep& s : b.steps)
    if (!(s.duration_s > 0)) return "the step log has a step without a positive duration_s";
  try {
    b.unchanged = replay_serve(b, b.cfg, [&](const StepPlan& p, std::size_t k) {
      b.plans.push_back(p);
      return b.steps[std::min(k, b.steps.size() - 1)].duration_s;
    });
  } catch (const std::runtime_error& e) {  // a config it refuses, or a run it cannot finish
    return std::string("the scheduler cannot rerun the point: ") + e.what();
  }
  const std::string rerun = "the scheduler rerun with the measured step times ";
  const std::string why = ": the log does not describe the run this scheduler would make";
  if (b.plans.size() != b.steps.size())
    return rerun + "made " + std::to_string(b.plans.size()) + " steps against the log's " +
           std::to_string(b.steps.size()) + why;
  for (std::size_t k = 0; k < b.steps.size(); ++k)
    if (b.plans[k].prefill_tokens != b.steps[k].prefill_tokens ||
        b.plans[k].decode_tokens != b.steps[k].decode_tokens)
      return rerun + "planned step " + std::to_string(k) + " with " +
             std::to_string(b.plans[k].prefill_tokens) + " prefill and " +
             std::to_string(b.plans[k].decode_tokens) + " decode tokens, the log " +
             std::to_string(b.steps[k].prefill_tokens) + " and " +
             std::to_string(b.steps[k].decode_tokens) + why;
  return "";
}

}  // namespace tpb
