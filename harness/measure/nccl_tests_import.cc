// nccl-tests' output as it prints it (src/common.cu, src/util.cu of NVIDIA/nccl-tests): a
// header of '#' lines ("# nccl-tests version V nccl-headers=H nccl-library=L", "# Collective
// test starting: all_reduce_perf", "# nThread T nGpus G ... graph: 0|1 ...", one "#  Rank R
// Group G Pid P on HOST device D [bus] NAME" line per rank, the column heads), then one row per
// size: size count type redop [root] time algbw busbw #wrong (out-of-place), the same four
// in-place. Outputs before nccl-tests 2.13 have no root column and no "Group"; mpirun's
// --tag-output puts "[R]" or "[J,R]<stdout>:" before each line.
#include "harness/measure/nccl_tests_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "collectives/model/fabric.h"
#include "harness/record/json/calibration_json.h"

namespace tpb {

namespace {

// mpirun --tag-output's prefix, "[0]" or "[1,0]<stdout>:".
std::string untagged(const std::string& line) {
  static const std::regex tag(R"(^\[[0-9,]+\](<std(out|err)>:)?)");
  return std::regex_replace(line, tag, "");
}

// A line of NCCL's own debug output (NCCL_DEBUG=INFO): "host:pid:tid [dev] NCCL INFO ...".
bool is_debug_line(const std::string& line) {
  static const std::regex debug(R"(^\s*\S+:\d+:\d+ \[\d+\] NCCL )");
  return std::regex_search(line, debug);
}

struct RankLine {
  std::string host, device;
  int64_t pid = 0;
};

std::optional<RankLine> rank_line(const std::string& line) {
  static const std::regex rank(
      R"(^#\s+Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+(\d{1,18})\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*?)\s*$)");
  std::smatch m;
  if (!std::regex_match(line, m, rank)) return std::nullopt;
  return RankLine{m[2], m[3], std::stoll(m[1])};
}

// A whole token as a number; nullopt for anything else ("N/A", "float", "12abc").
std::optional<double> number(const std::string& t) {
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// The header's facts, from one '#' line at a time.
struct Header {
  std::string test, version;
  bool graph = false, root_column = false, seen_nthread = false;
  std::vector<RankLine> ranks;
};

void read_header_line(const std::string& line, Header& h) {
  static const std::regex test(R"(Collective test starting:\s*(\S+))");
  static const std::regex library(R"(nccl-library=(\d{1,9})\b)");
  static const std::regex graph(R"(\bgraph:\s*(\d{1,9})\b)");
  std::smatch m;
  if (std::regex_search(line, m, test)) h.test = m[1];
  if (std::regex_search(line, m, library)) h.version = nccl_version_name(std::stoll(m[1]));
  if (line.find("nThread") != std::string::npos) {
    h.seen_nthread = true;
    if (std::regex_search(line, m, graph)) h.graph = std::stoi(m[1]) != 0;
  }
  if (line.find("redop") != std::string::npos && line.find("root") != std::string::npos)
    h.root_column = true;
  if (std::optional<RankLine> r = rank_line(line)) h.ranks.push_back(*r);
}

constexpr double kMaxBytes = 1e15;

// One size and its out-of-place time (us) into the curve; `at` names the row in messages.
void add_point(double size, std::optional<double> time_us, const std::string& type,
               const std::string& at, NcclTestsOutput& r) {
  if (!time_us || !std::isfinite(*time_us) || *time_us <= 0)
    throw BadInput(at + ": the out-of-place time is not a positive number");
  r.dtype = type;
  // A size past any buffer, below zero, between two whole bytes (or NaN) is not a byte count.
  if (!(size >= 0 && size <= kMaxBytes) || size != std::floor(size))
    throw BadInput(fmt::format("{}: size {} is not a byte count", at, size));
  if (size == 0) {
    ++r.zero_size_rows;  // nothing to price: the curve needs bytes >= 1
    return;
  }
  const auto bytes = static_cast<int64_t>(size);
  if (!r.points.empty() && bytes <= r.points.back().first)
    throw BadInput(
        fmt::format("{}: size {} does not ascend after {} (two runs in one file? give "
                    "one run's output)",
                    at, bytes, r.points.back().first));
  r.points.emplace_back(bytes, *time_us * 1e-6);
}

// One row of the text table: size count type redop [root] time algbw busbw #wrong, in-place.
void read_row(const std::vector<std::string>& t, bool root_column, const std::string& at,
              NcclTestsOutput& r) {
  const std::size_t time_at = root_column ? 5 : 4, need = time_at + 8;
  const std::optional<double> size = t.empty() ? std::nullopt : number(t[0]);
  if (t.size() < need || !size || *size < 0)
    throw BadInput(fmt::format(
        "{} is not a row of the table ({} of its {} columns: another program's output, or "
        "NCCL's debug lines, broke it apart; rerun without NCCL_DEBUG or give the -J JSON)",
        at, t.size(), need));
  add_point(*size, number(t[time_at]), t[2], at, r);
}

void check_run(const NcclTestsOutput& r, const std::string& where) {
  if (r.test.find("all_reduce") == std::string::npos)
    throw BadInput(where + ": the output is of '" + r.test +
                   "'; a measured topology holds an all-reduce curve (all_reduce_perf)");
  if (r.ranks < 2)
    throw BadInput(
        fmt::format("{}: the output lists {} rank(s); an all-reduce curve needs a group "
                    "of at least 2",
                    where, r.ranks));
  if (r.points.size() < 2)
    throw BadInput(fmt::format("{}: {} size(s) of at least 1 byte; a curve needs at least 2", where,
                               r.points.size()));
}

// j[key] where it is a string, "" otherwise (a JSON written by hand may hold anything).
std::string str_or_empty(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

int count_hosts(const std::vector<std::string>& hosts) {
  return static_cast<int>(std::set<std::string>(hosts.begin(), hosts.end()).size());
}

// Processes: the distinct (host, pid) pairs of the rank lines; a rank without a pid (a JSON
// written by hand) counts as a process of its own.
int count_processes(const std::vector<std::pair<std::string, int64_t>>& procs) {
  std::set<std::pair<std::string, int64_t>> seen;
  int unnamed = 0;
  for (const auto& p : procs) p.second > 0 ? (void)seen.insert(p) : (void)++unnamed;
  return static_cast<int>(seen.size()) + unnamed;
}

}  // namespace

bool is_nccl_tests_output(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (untagged(line).rfind("# nThread", 0) == 0) return true;
  return false;
}

std::string nccl_version_name(int64_t code) {
  // NCCL_VERSION_CODE: major x 10000 + minor x 100 + patch from 2.9, x 1000 + x 100 before.
  if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code / 100 % 10, code % 100);
}

NcclTestsOutput parse_nccl_tests_text(const std::string& text, const std::string& where) {
  Header h;
  NcclTestsOutput r;
  std::istringstream in(text);
  int line_no = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    const std::string line = untagged(raw);
    if (line.rfind('#', 0) == 0) {
      read_header_line(line, h);
      continue;
    }
    const std::vector<std::string> t = tokens(line);
    if (t.empty() || is_debug_line(line) || !h.seen_nthread) continue;
    const std::string at = fmt::format("{}: line {}", where, line_no);
    if (line.find(" NCCL INFO ") != std::string::npos ||
        line.find(" NCCL WARN ") != std::string::npos)
      throw BadInput(at +
                     " has NCCL's debug output inside a row of the table: rerun without "
                     "NCCL_DEBUG, or give the -J JSON");
    read_row(t, h.root_column, at, r);
  }
  if (h.test.empty())
    throw BadInput(where +
                   ": no '# Collective test starting: NAME' line says which test this is "
                   "(nccl-tests before 2.13 print none: add '# Collective test starting: "
                   "all_reduce_perf' above the table if it is one)");
  r.test = h.test;
  r.nccl_version = h.version;
  r.graph = h.graph;
  r.ranks = static_cast<int>(h.ranks.size());
  std::vector<std::string> hosts;
  std::vector<std::pair<std::string, int64_t>> procs;
  for (const RankLine& k : h.ranks) hosts.push_back(k.host), procs.emplace_back(k.host, k.pid);
  r.hosts = count_hosts(hosts);
  r.processes = count_processes(procs);
  if (!h.ranks.empty()) r.gpu = h.ranks.front().device, r.host = h.ranks.front().host;
  check_run(r, where);
  return r;
}

NcclTestsOutput parse_nccl_tests_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("nccl_version") || !j["nccl_version"].is_number_integer() ||
      !j.contains("config") || !j["config"].is_object() || !j["config"].contains("devices") ||
      !j["config"]["devices"].is_array() || !j.contains("results") || !j["results"].is_array())
    throw BadInput(where +
                   ": not an nccl-tests JSON (-J): it needs nccl_version, "
                   "config.devices and results");
  NcclTestsOutput r;
  r.nccl_version = nccl_version_name(j["nccl_version"].get<int64_t>());
  const auto& graph = j["config"].value("graph", nlohmann::json(0));
  r.graph = graph.is_number() && graph.get<double>() != 0;
  std::vector<std::string> hosts;
  std::vector<std::pair<std::string, int64_t>> procs;
  for (const auto& d : j["config"]["devices"]) {
    if (!d.is_object()) continue;
    hosts.push_back(str_or_empty(d, "hostname"));
    const bool has_pid = d.contains("pid") && d["pid"].is_number_integer();
    procs.emplace_back(hosts.back(), has_pid ? d["pid"].get<int64_t>() : 0);
    if (r.gpu.empty()) r.gpu = str_or_empty(d, "device_info"), r.host = hosts.back();
  }
  r.ranks = static_cast<int>(hosts.size());
  r.hosts = count_hosts(hosts);
  r.processes = count_processes(procs);
  const auto& args = j.value("args", nlohmann::json::array());
  if (args.is_array() && !args.empty() && args[0].is_string()) {
    r.test = args[0].get<std::string>();
    r.test = r.test.substr(r.test.find_last_of('/') + 1);
  }
  for (std::size_t i = 0; i < j["results"].size(); ++i) {
    const nlohmann::json& x = j["results"][i];
    const std::string at = fmt::format("{}: results[{}]", where, i);
    const nlohmann::json oop = x.is_object() ? x.value("out_of_place", nlohmann::json()) : x;
    if (!x.is_object() || !x.contains("size") || !x["size"].is_number() || !oop.is_object() ||
        !oop.contains("time"))
      throw BadInput(at + " has no size or out_of_place.time");
    const std::optional<double> t =
        oop["time"].is_number() ? std::optional<double>(oop["time"].get<double>()) : std::nullopt;
    add_point(x["size"].get<double>(), t, str_or_empty(x, "type"), at, r);
  }
  check_run(r, where);
  return r;
}

std::string gpus_per_process_note(const NcclTestsOutput& r) {
  if (r.processes <= 0 || r.ranks <= r.processes) return "";
  return fmt::format(
      "{:.3g} GPUs per process: one process drives several GPUs (nccl-tests -g), which an NCCL "
      "maintainer names as a likely cause of higher latency ('the CUDA latency overheads of "
      "single process jobs'; one GPU per process is the recommended method, NVIDIA/nccl-tests "
      "issue 333): its small sizes may read slower than a serving engine's one process per GPU",
      static_cast<double>(r.ranks) / r.processes);
}

MeasuredTopologyRecord nccl_tests_topology(const NcclTestsOutput& r, const std::string& name,
                                           const std::string& file, const std::string& where) {
  MeasuredTopologyRecord t;
  t.name = !name.empty() ? name : r.host.empty() ? "nccl-tests" : "nccl-tests-" + r.host;
  t.description = "The all-reduce curve an nccl-tests run measured (" + file +
                  "), imported by tpbench calibrate --from. Modelled only (--backend model): it "
                  "prices every all-reduce of a group of its size; it sets no knob of a real run.";
  t.model.gpus_per_node = r.ranks / std::max(1, r.hosts);
  MeasuredFabricRecord& m = t.model.measured;
  m.collective = "nccl";
  m.ranks = r.ranks;
  m.all_reduce = r.points;
  const std::string note = gpus_per_process_note(r);
  m.source = fmt::format(
      "measured by nccl-tests {} ({}): NCCL {}, {} ranks on {} host(s){} in {} process(es){}, {} "
      "launches, type {}, out-of-place time per call; imported by tpbench calibrate --from",
      r.test, file, r.nccl_version.empty() ? "version not printed" : r.nccl_version, r.ranks,
      r.hosts, r.gpu.empty() ? "" : " (" + r.gpu + ")", r.processes,
      note.empty() ? "" : " (" + note + ")", r.graph ? "CUDA-graph" : "eager", r.dtype);
  (void)parse_fabric(fabric_section_json(t), where);  // what --topology will accept
  return t;
}

}  // namespace tpb
