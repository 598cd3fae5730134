// File handling for results. POSIX calls, because fsync is the point.
#include "harness/results_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "harness/errors.h"

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
                             nlohmann::ordered_json config)
    : dir_(dir) {
  ensure_writable_dir(dir);
  doc_["schema"] = kSchemaName;
  doc_["schema_version"] = kSchemaVersion;
  doc_["context"] = std::move(context);
  doc_["config"] = std::move(config);
  doc_["points"] = nlohmann::ordered_json::array();
  write_results();
}

void ResultsWriter::add_point(const nlohmann::ordered_json& point) {
  const std::string path = dir_ + "/points.jsonl";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw Error(ExitCode::internal, "cannot open " + path + ": " + std::strerror(errno));
  write_all(fd, point.dump() + "\n", path);
  ::fsync(fd);
  ::close(fd);
  doc_["points"].push_back(point);
  write_results();
}

void ResultsWriter::set_section(const std::string& key, const nlohmann::ordered_json& value) {
  doc_[key] = value;
  write_results();
}

void ResultsWriter::write_results() {
  write_file_atomic(dir_ + "/results.json", doc_.dump(2) + "\n");
}

}  // namespace tpb
