// File handling for results. POSIX calls, because fsync is the point.
#include "harness/record/json/results_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "base/errors.h"
#include "harness/record/json/results_json.h"

namespace tpb {

namespace {

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ExitCode::internal, "cannot write " + path + ": " + std::strerror(errno));
    }
    off += static_cast<std::size_t>(n);
  }
}

// Strings from outside (argv, env, host names, file contents) may hold bytes that are not
// UTF-8; nlohmann throws on them by default, which would cost the run its results. U+FFFD in
// their place keeps the record valid JSON.
std::string dump_text(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

void ensure_writable_dir(const std::string& dir) {
  if (dir.empty()) throw BadInput("--out: an output directory is required");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw BadInput("--out: cannot create '" + dir + "': " + ec.message());
  const std::string probe = dir + "/.tpbench-write-test";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw BadInput("--out: cannot write to '" + dir + "': " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string archive_previous_results(const std::string& dir) {
  namespace fs = std::filesystem;
  const char* names[] = {"results.json", "points.jsonl", "trace.json",
                         "traces",       "steps.jsonl",  "requests.jsonl"};
  bool any = false;
  for (const char* n : names) any = any || fs::exists(fs::path(dir) / n);
  if (!any) return "";
  char stamp[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  // Two runs in the same second get distinct folders.
  fs::path to = fs::path(dir) / (std::string("previous-") + stamp);
  for (int k = 1; fs::exists(to); ++k)
    to = fs::path(dir) / (std::string("previous-") + stamp + "-" + std::to_string(k));
  std::error_code ec;
  fs::create_directory(to, ec);
  if (ec) throw Error(ExitCode::internal, "cannot create " + to.string() + ": " + ec.message());
  for (const char* n : names) {
    const fs::path from = fs::path(dir) / n;
    if (!fs::exists(from)) continue;
    fs::rename(from, to / n, ec);
    if (ec) throw Error(ExitCode::internal, "cannot move " + from.string() + ": " + ec.message());
  }
  return to.string();
}

void report_archive(const ResultsWriter& w) {
  if (!w.archived_to().empty())
    std::cout << "note: " << w.dir() << " held results from an earlier run; moved them to "
              << w.archived_to() << "\n";
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(ExitCode::internal, "cannot create " + tmp + ": " + std::strerror(errno));
  write_all(fd, text, tmp);
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(ExitCode::internal, "cannot rename " + tmp + ": " + std::strerror(errno));
}

ResultsWriter::ResultsWriter(const std::string& dir, nlohmann::ordered_json context,
                             nlohmann::ordered_json config, Existing existing)
    : dir_(dir) {
  ensure_writable_dir(dir);
  if (existing == Existing::archive) archived_to_ = archive_previous_results(dir);
  doc_["schema"] = kSchemaName;
  doc_["schema_version"] = kSchemaVersion;
  doc_["context"] = std::move(context);
  doc_[config_section()] = std::move(config);
  doc_["points"] = nlohmann::ordered_json::array();
  write_results();
}

void ResultsWriter::append_lines(const std::string& name,
                                 const std::vector<nlohmann::ordered_json>& lines) const {
  const std::string path = dir_ + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw Error(ExitCode::internal, "cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  for (const auto& l : lines) text += dump_text(l, -1) + "\n";
  write_all(fd, text, path);
  ::fsync(fd);
  ::close(fd);
}

void ResultsWriter::add_point(const nlohmann::ordered_json& point) {
  append_lines("points.jsonl", {point});
  doc_["points"].push_back(point);
  write_results();
}

void ResultsWriter::add_record(const PointOutcome& outcome) {
  if (outcome.trace && outcome.record.trace)
    write_file_atomic(dir_ + "/" + *outcome.record.trace, outcome.trace->dump() + "\n");
  add_point(to_json(outcome.record));
}

void ResultsWriter::add_record(const CollPointRecord& point) {
  add_point(to_json(point));
}

void ResultsWriter::set_summary(const CollSummaryRecord& summary) {
  set_section(coll_summary_section(), to_json(summary));
}

std::string ResultsWriter::sweep_trace_name(std::size_t point_index) {
  return "traces/point-" + std::to_string(point_index) + ".json";
}

void ResultsWriter::prepare_sweep_traces() const {
  std::filesystem::create_directories(dir_ + "/traces");
}

void ResultsWriter::set_section(const std::string& key, const nlohmann::ordered_json& value) {
  doc_[key] = value;
  write_results();
}

void ResultsWriter::write_results() {
  write_file_atomic(dir_ + "/results.json", dump_text(doc_, 2) + "\n");
}

}  // namespace tpb
