// A results document as the printers read it (report, compare, diagnose, export): its
// sections as records, read back through the same field lists the writer walks
// (record/json/results_doc_json.h), so no printer spells a key of results.json.
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/record/coll_point_record.h"
#include "harness/record/context_record.h"
#include "harness/record/curve_record.h"
#include "harness/record/point_record.h"
#include "harness/record/verdict.h"
#include "harness/record/whatif/whatif_record.h"

namespace tpb {

// What every entry of points[] has whatever its kind, as written, for the printers that take
// any results document: a point that is neither a model nor a collectives point keeps this.
struct PointHead {
  // As written: a collectives point's are not PointParams.
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  std::string status = "?";  // "?" when absent
  std::string reason;        // "" when absent or not text
  // The params' phase, batch and tp where they are there (else "?", 0, 0).
  std::string phase = "?";
  int64_t batch = 0, tp = 0;
};

// One entry of points[], in the file's order: a model point (run, sweep or serve: `model`), a
// collectives size (`coll`), or neither (a kind this build does not know, or a point tpbench
// did not write), which has its head alone.
struct ResultsPoint {
  PointHead head;
  std::optional<PointRecord> model;
  std::optional<CollPointRecord> coll;
};

struct ResultsDoc {
  std::optional<RunContextRecord> context;  // nullopt: absent, or not one tpbench wrote
  std::vector<ResultsPoint> points;
  std::optional<CurveRecord> curve;               // serve over several loads
  std::optional<std::vector<Verdict>> diagnosis;  // run: its point's verdicts as written
  std::optional<CollSummaryRecord> collectives_summary;
  std::optional<WhatifRecord> whatif;  // after `tpbench whatif`
};

// The model points (run, sweep and serve) in order, for the judgements over a whole run.
inline std::vector<PointRecord> model_points(const ResultsDoc& doc) {
  std::vector<PointRecord> out;
  for (const ResultsPoint& p : doc.points)
    if (p.model) out.push_back(*p.model);
  return out;
}

// Every point when every point is a collectives size (and there is one), else nothing.
inline std::optional<std::vector<CollPointRecord>> collectives_points(const ResultsDoc& doc) {
  std::vector<CollPointRecord> out;
  for (const ResultsPoint& p : doc.points) {
    if (!p.coll) return std::nullopt;
    out.push_back(*p.coll);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace tpb
