// The mapping from a serve point's record to vLLM's result keys. vLLM writes seconds for
// `duration` and milliseconds for every latency; a latency's "median" is tpbench's p50.
#include "harness/record/json/vllm_result_json.h"

#include <fmt/format.h>

#include <cmath>

namespace tpb {

namespace {

nlohmann::ordered_json num(double x) {
  return std::isfinite(x) ? nlohmann::ordered_json(x) : nlohmann::ordered_json();
}

// vLLM's model_id is the last path component of --model.
std::string base_model(const std::string& model) {
  const auto slash = model.find_last_of('/');
  return slash == std::string::npos ? model : model.substr(slash + 1);
}

// vLLM keeps the rate as a float (Python prints 2.0, 0.5) or inf for "all at once".
std::string rate_text(const ServeParamsRecord& s) {
  if (!s.rate) return "inf";
  return *s.rate == std::floor(*s.rate) ? fmt::format("{:.1f}", *s.rate)
                                        : fmt::format("{}", *s.rate);
}

void latency(nlohmann::ordered_json& j, const char* name, const std::optional<LatencyStats>& l) {
  if (!l) return;
  j[fmt::format("mean_{}_ms", name)] = num(l->mean * 1e3);
  j[fmt::format("median_{}_ms", name)] = num(l->p50 * 1e3);
  j[fmt::format("std_{}_ms", name)] = l->std ? num(*l->std * 1e3) : nlohmann::ordered_json();
  j[fmt::format("p99_{}_ms", name)] = num(l->p99 * 1e3);
}

}  // namespace

nlohmann::ordered_json vllm_result_json(const PointRecord& p, const std::string& date,
                                        int64_t point) {
  nlohmann::ordered_json j;
  const ServeParamsRecord s = p.params.serve.value_or(ServeParamsRecord{});
  j["date"] = date;
  j["endpoint_type"] = "tpbench";
  j["backend"] = "tpbench";
  j["label"] = nullptr;
  j["model_id"] = p.params.model;
  j["tokenizer_id"] = nullptr;  // no tokenizer: lengths are token counts as drawn
  j["num_prompts"] = s.requests;
  j["request_rate"] = s.rate ? nlohmann::ordered_json(*s.rate) : nlohmann::ordered_json("inf");
  j["burstiness"] = s.burstiness;
  j["max_concurrency"] = s.concurrency ? nlohmann::ordered_json(*s.concurrency) : nullptr;
  if (!p.metrics || !p.metrics->ttft_s || !p.serve) return j;  // no serving metrics (oom)
  const MetricsRecord& m = *p.metrics;
  const ServeRunRecord& r = *p.serve;
  j["duration"] = num(r.duration_s);
  j["completed"] = r.requests_completed;
  j["failed"] = r.requests_rejected;
  if (r.input_tokens) j["total_input_tokens"] = *r.input_tokens;
  if (r.output_tokens) j["total_output_tokens"] = *r.output_tokens;
  j["request_throughput"] = num(m.request_throughput.value_or(NAN));
  j["request_goodput"] = m.goodput ? num(m.goodput->requests_per_s) : nlohmann::ordered_json();
  j["output_throughput"] = num(m.output_tokens_per_s.value_or(NAN));
  j["total_token_throughput"] = num(m.total_tokens_per_s.value_or(NAN));
  latency(j, "ttft", m.ttft_s);
  latency(j, "tpot", m.tpot_s);
  latency(j, "itl", m.itl_s);
  latency(j, "e2el", m.e2el_s);
  // Not vLLM's: where the point's full record is, and that its times are on the virtual clock.
  j["tpbench"] = {
      {"results", "results.json"}, {"point", point}, {"clock", s.clock}, {"slo", s.slo}};
  return j;
}

std::string vllm_result_filename(const PointRecord& p, const std::string& date) {
  const ServeParamsRecord s = p.params.serve.value_or(ServeParamsRecord{});
  const std::string conc = s.concurrency ? fmt::format("-concurrency{}", *s.concurrency) : "";
  return fmt::format("tpbench-{}qps{}-{}-{}.json", rate_text(s), conc, base_model(p.params.model),
                     date);
}

}  // namespace tpb
