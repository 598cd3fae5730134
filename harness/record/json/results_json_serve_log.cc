// The serve logs' lines (results/SCHEMA.md, "serve logs": steps.jsonl, requests.jsonl), mapped by
// the visitor of results_json_visit.h, as the points are in results_json.cc: one line per field.
#include <optional>

#include "harness/record/json/results_json.h"
#include "harness/record/json/results_json_visit.h"
#include "harness/record/serve_log_record.h"

namespace tpb {

namespace {

template <class V, Is<StepRankRecord> R>
void fields(V& v, R& r) {
  v("rank", r.rank);
  v("compute_s", r.compute_s);
  v("wait_s", r.wait_s);
  v("transfer_s", r.transfer_s);
  v("host_s", r.host_s);
}

template <class V, Is<StepLogRecord> R>
void fields(V& v, R& r) {
  v("point", r.point);
  v("step", r.step);
  v("t_s", r.t_s);
  v("duration_s", r.duration_s);
  v("running", r.running);
  v("waiting", r.waiting);
  v("preempted", r.preempted);
  v("batch_tokens", r.batch_tokens);
  v("prefill_tokens", r.prefill_tokens);
  v("decode_tokens", r.decode_tokens);
  v("padding_tokens", r.padding_tokens);
  v("kv_used_tokens", r.kv_used_tokens);
  v("kv_capacity_tokens", r.kv_capacity_tokens);
  v("device_time_s", r.device_time_s);
  v("host_gap_s", r.host_gap_s);
  v("ranks", r.ranks);
}

template <class V, Is<RequestLogRecord> R>
void fields(V& v, R& r) {
  v("point", r.point);
  v("id", r.id);
  v("arrival_s", r.arrival_s);
  v("admitted_s", r.admitted_s);
  v("first_token_s", r.first_token_s);
  v("finish_s", r.finish_s);
  v("prompt_len", r.prompt_len);
  v("output_len", r.output_len);
  v("preemptions", r.preemptions);
  v("warmup", r.warmup);
  v("rejected", r.rejected);
  v("reason", r.reason);
  v("token_s", r.token_s);
}

}  // namespace

TPB_RECORD_JSON(StepLogRecord, step_log_from_json, "serve step")
TPB_RECORD_JSON(RequestLogRecord, request_log_from_json, "serve request")

std::optional<int64_t> log_line_point(const nlohmann::json& line) {
  // steps.jsonl and requests.jsonl name their point alike (StepLogRecord, RequestLogRecord).
  const char* key = key_of(&StepLogRecord::point);
  if (!line.is_object() || !line.contains(key) || !line[key].is_number_integer())
    return std::nullopt;
  return line[key].get<int64_t>();
}

}  // namespace tpb
