// vLLM's `vllm bench serve --save-result` file for one serving point, from its record: vLLM's
// key names and units (ms, tokens, req/s), so vLLM's comparison scripts read tpbench's points.
// Every vLLM key tpbench writes is spelled here and nowhere else; what tpbench does not
// measure is left out, never written as a plausible zero (results/SCHEMA.md, "vLLM result").
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/record/point_record.h"

namespace tpb {

// `date` is vLLM's current_dt, "%Y%m%d-%H%M%S"; `point` the point's index in results.json.
nlohmann::ordered_json vllm_result_json(const PointRecord& p, const std::string& date,
                                        int64_t point);

// vLLM's default name: {label}-{request_rate}qps[-concurrency{N}]-{model}-{date}.json, with
// label "tpbench" and request_rate "inf" for a closed loop (vLLM's spelling of one).
std::string vllm_result_filename(const PointRecord& p, const std::string& date);

}  // namespace tpb
