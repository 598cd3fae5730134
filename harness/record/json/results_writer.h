// Crash-safe results: points.jsonl is appended and fsynced per point; results.json is
// rewritten through a temp file + rename, so a reader never sees a torn file.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/record/coll_point_record.h"
#include "harness/record/point_record.h"

namespace tpb {

inline constexpr const char* kSchemaName = "tpbench.results";
inline constexpr const char* kSchemaVersion = "1.25.0";

// What the writer does with results already in `dir`.
enum class Existing {
  archive,  // a fresh run: move them to dir/previous-<UTC time>/ (never delete measurements)
  keep,     // a resumed sweep: points.jsonl is its ledger and stays
};

class ResultsWriter {
 public:
  // Creates `dir` if needed and proves it writable; throws BadInput naming --out otherwise.
  ResultsWriter(const std::string& dir, nlohmann::ordered_json context,
                nlohmann::ordered_json config, Existing existing = Existing::archive);

  void add_point(const nlohmann::ordered_json& point);
  // Appends JSON lines to dir/name and fsyncs them (serve's steps.jsonl and requests.jsonl).
  void append_lines(const std::string& name,
                    const std::vector<nlohmann::ordered_json>& lines) const;
  // Writes the outcome's trace (when it has one) under its record's `trace` name, then adds
  // the record; the trace first, so the ledger never names a trace that is not there.
  void add_record(const PointOutcome& outcome);
  // `tpbench collectives`: one message size's point, and the run's closing summary section.
  void add_record(const CollPointRecord& point);
  void set_summary(const CollSummaryRecord& summary);

  // Where a point's trace goes inside the folder: one per run, or one per sweep point
  // (numbered by plan order, which --resume keeps, so a resumed point's trace stays its own).
  static std::string run_trace_name() { return "trace.json"; }
  static std::string sweep_trace_name(std::size_t point_index);
  // Creates the folder sweep traces go in.
  void prepare_sweep_traces() const;
  // Extra top-level sections (e.g. "diagnosis"); rewrites results.json.
  void set_section(const std::string& key, const nlohmann::ordered_json& value);
  const nlohmann::ordered_json& results() const { return doc_; }
  const std::string& dir() const { return dir_; }
  // Where the previous results in dir went (empty when there were none).
  const std::string& archived_to() const { return archived_to_; }

 private:
  void write_results();
  std::string dir_;
  std::string archived_to_;
  nlohmann::ordered_json doc_;
};

// Throws BadInput("--out: ...") when `dir` cannot be created or written.
void ensure_writable_dir(const std::string& dir);

// Tells the user (stdout) where earlier results in the writer's dir were moved, if anywhere.
void report_archive(const ResultsWriter& w);

// Moves results.json, points.jsonl and the traces of `dir`, when present, into a new
// dir/previous-<UTC time>/ and returns its path ("" when there was nothing to move). A second run
// into the same
// --out would otherwise append to the first run's points.jsonl.
std::string archive_previous_results(const std::string& dir);

// Writes `text` to `path` atomically (temp file in the same directory, fsync, rename).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace tpb
