// Resuming a serve run: the same options, the finished loads kept byte for byte.
#include "harness/drive/serve/serve_resume.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/errors.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/results_reader.h"

namespace tpb {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void trim_log(const std::string& path, const std::vector<char>& done) {
  std::ifstream in(path);
  if (!in) return;  // nothing was logged yet
  std::string line, kept;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    const std::optional<int64_t> point = log_line_point(j);
    if (j.is_discarded() || !point) continue;
    const int64_t k = *point;
    if (k >= 0 && static_cast<std::size_t>(k) < done.size() && done[static_cast<std::size_t>(k)])
      kept += line + "\n";
  }
  write_file_atomic(path, kept);
}

}  // namespace

void check_same_serve_config(const std::string& dir, const nlohmann::ordered_json& config) {
  const nlohmann::ordered_json old =
      load_results(dir, "--resume").value(config_section(), nlohmann::ordered_json());
  for (const auto& [k, v] : config.items()) {
    if (k == "out") continue;
    if (!old.contains(k) || old[k] != v)
      throw BadInput("--resume: " + dir + " was run with other options (" + k + ": " +
                     (old.contains(k) ? old[k].dump() : "absent") + " there, " + v.dump() +
                     " here)");
  }
}

std::vector<char> finished_loads(const ServeSpec& spec, const ResumeLedger& ledger) {
  std::vector<char> done(spec.loads.size(), 0);
  for (const PointRecord& p : ledger.points) {
    if (!p.params.serve || p.params.serve->load != spec.axis) continue;
    for (std::size_t i = 0; i < spec.loads.size(); ++i)
      done[i] = done[i] || p.params.serve->x == spec.loads[i];
  }
  return done;
}

void trim_serve_logs(const std::string& dir, const std::vector<char>& done) {
  trim_log(dir + "/steps.jsonl", done);
  trim_log(dir + "/requests.jsonl", done);
}

CurveInput curve_input(const PointRecord& p) {
  CurveInput c;
  c.x = p.params.serve ? p.params.serve->x : kNaN;
  c.status = point_status_name(p.status);
  c.total_tokens_per_s = kNaN;
  c.itl_p95_s = kNaN;
  c.ttft_p95_s = kNaN;
  if (p.status != PointStatus::ok || !p.metrics || !p.serve) {
    c.kv_reason = p.reason;
    return c;
  }
  const MetricsRecord& m = *p.metrics;
  c.total_tokens_per_s = m.total_tokens_per_s.value_or(kNaN);
  c.itl_p95_s = m.itl_s ? m.itl_s->p95 : kNaN;
  c.ttft_p95_s = m.ttft_s ? m.ttft_s->p95 : kNaN;
  if (m.goodput) {
    c.slo_attainment = m.goodput->fraction;
    c.goodput_rps = m.goodput->requests_per_s;
  }
  c.gpus = p.ranks ? static_cast<int64_t>(p.ranks->size()) : 0;
  c.cost = m.cost_per_mtok;
  const ServeRunRecord& s = *p.serve;
  c.kv_full_with_queue = s.kv_full_steps > 0 || s.preemptions > 0;
  if (c.kv_full_with_queue)
    c.kv_reason = std::to_string(s.kv_full_steps) + " steps with the KV cache (" +
                  std::to_string(s.kv_capacity_tokens) + " tokens) holding back " +
                  std::to_string(s.max_waiting) + " waiting at most, " +
                  std::to_string(s.preemptions) + " preemptions";
  return c;
}

}  // namespace tpb
