// Crash-safe results: points.jsonl is appended and fsynced per point; results.json is
// rewritten through a temp file + rename, so a reader never sees a torn file.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpb {

inline constexpr const char* kSchemaName = "tpbench.results";
inline constexpr const char* kSchemaVersion = "1.1.0";

class ResultsWriter {
 public:
  // Creates `dir` if needed and proves it writable; throws BadInput naming --out otherwise.
  ResultsWriter(const std::string& dir, nlohmann::ordered_json context,
                nlohmann::ordered_json config);

  void add_point(const nlohmann::ordered_json& point);
  // Extra top-level sections (e.g. "diagnosis"); rewrites results.json.
  void set_section(const std::string& key, const nlohmann::ordered_json& value);
  const nlohmann::ordered_json& results() const { return doc_; }
  const std::string& dir() const { return dir_; }

 private:
  void write_results();
  std::string dir_;
  nlohmann::ordered_json doc_;
};

// Throws BadInput("--out: ...") when `dir` cannot be created or written.
void ensure_writable_dir(const std::string& dir);

// Writes `text` to `path` atomically (temp file in the same directory, fsync, rename).
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace tpb
