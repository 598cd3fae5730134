// The one mapping between point records and the results' JSON: every field name of a point
// is spelled in results_json.cc and nowhere else (the serve logs' lines in
// results_json_serve_log.cc, a collectives run's in results_json_coll.cc). Key order is the
// schema's (results/SCHEMA.md).
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/record/coll_point_record.h"
#include "harness/record/context_record.h"
#include "harness/record/curve_record.h"
#include "harness/record/point_record.h"
#include "harness/record/results_doc.h"
#include "harness/record/serve_log_record.h"
#include "harness/record/verdict.h"

namespace tpb {

nlohmann::ordered_json to_json(const PointRecord& p);
nlohmann::ordered_json to_json(const RankRecord& r);
nlohmann::ordered_json to_json(const PointParams& p);

// Inverses of to_json: to_json(point_from_json(j)) == j for any point tpbench wrote. Fields the
// record leaves optional stay absent when absent; a null number reads as NaN, which writes
// back as null. Throws BadInput when `j` lacks a field every point has.
PointRecord point_from_json(const nlohmann::ordered_json& j);
RankRecord rank_from_json(const nlohmann::ordered_json& j);
PointParams params_from_json(const nlohmann::ordered_json& j);

// The serve logs' lines (steps.jsonl, requests.jsonl) and their inverses.
nlohmann::ordered_json to_json(const StepLogRecord& r);
nlohmann::ordered_json to_json(const RequestLogRecord& r);
StepLogRecord step_log_from_json(const nlohmann::ordered_json& j);
RequestLogRecord request_log_from_json(const nlohmann::ordered_json& j);

// A serve run's curve section (the results' top-level curve_section()) and its inverse.
nlohmann::ordered_json to_json(const CurveRecord& c);
CurveRecord curve_from_json(const nlohmann::ordered_json& j);
const char* curve_section();

// The results' top-level array of point records (what load_results checks is there), its
// context block and a run's verdicts.
const char* points_section();
const char* context_section();
const char* diagnosis_section();
// The resolved config the points ran (the option keys, harness/config/options/), and a
// sweep's first point that ran out of memory.
const char* config_section();
// The point a line of steps.jsonl or requests.jsonl belongs to; nullopt for a line without one.
std::optional<int64_t> log_line_point(const nlohmann::json& line);
const char* memory_exhaustion_section();

// For documents that may hold other kinds of points (a collectives run's): nothing when `j`
// is not a model point record.
std::optional<PointRecord> try_point_from_json(const nlohmann::ordered_json& j);

PointStatus point_status_from_name(const std::string& name);

// The params that identify a point across launches (sweep --resume): without the layer count
// when it was left to the memory plan, since it is then an outcome, not an input.
nlohmann::ordered_json params_identity_json(const PointParams& p, bool with_layers);

// The results' memory_exhaustion section: the sweep's first point that did not fit.
nlohmann::ordered_json memory_exhaustion_json(std::size_t point_index, const PointRecord& p);

// The metadata a point's trace.json carries, so a trace file names its point.
nlohmann::ordered_json trace_meta_json(const PointParams& p);

// A point's params as (key, text) pairs in schema order, for labels: a string as written, a
// list joined with ',' ("none" when empty), anything else as its JSON.
std::vector<std::pair<std::string, std::string>> param_texts(const PointParams& p);

// The params report.md's point title shows itself (model, phase, batch, context, prompt, tp,
// dtype, backend, and a serve point's load): the others are added when they vary.
bool param_in_point_title(const std::string& key);

// What every point has whatever its kind (record/results_doc.h), read leniently: a field that
// is absent or of another type keeps PointHead's default.
PointHead point_head_from_json(const nlohmann::ordered_json& j);

// The params a compare row's heading leaves out: the model and how long each point ran, which
// say nothing about what the row compares.
bool param_omitted_from_heading(const std::string& key);

// `tpbench collectives`: a message size's point and the run's closing summary, with their
// inverses (to_json(coll_point_from_json(j)) == j for any collectives point tpbench wrote).
nlohmann::ordered_json to_json(const CollPointRecord& p);
nlohmann::ordered_json to_json(const CollParamsRecord& p);
nlohmann::ordered_json to_json(const CollSummaryRecord& s);
CollPointRecord coll_point_from_json(const nlohmann::ordered_json& j);
CollSummaryRecord coll_summary_from_json(const nlohmann::ordered_json& j);
// Nothing when `j` is not a collectives point record.
std::optional<CollPointRecord> try_coll_point_from_json(const nlohmann::ordered_json& j);
// The results' context block, the versions `tpbench info` prints, and diagnose's verdicts.
nlohmann::ordered_json to_json(const RunContextRecord& c);
RunContextRecord context_from_json(const nlohmann::ordered_json& j);
nlohmann::ordered_json to_json(const VersionsRecord& v);
nlohmann::ordered_json to_json(const std::vector<Verdict>& v);
std::vector<Verdict> verdicts_from_json(const nlohmann::ordered_json& j);
// `diagnose --json`'s document: {"files": [...]}.
nlohmann::ordered_json to_json(const std::vector<FileDiagnosis>& files);

// The results' top-level section that holds a collectives run's CollSummaryRecord.
const char* coll_summary_section();

}  // namespace tpb
