// Layout follows the article's reading order: what ran and on what (context), the summary of
// every point (occupancy next to MBU, MFU and its ceiling), then each point's ranks (who waits
// for whom), its warnings and the diagnosis in the article's debugging order.
#include "harness/report/report_md.h"

#include <fmt/format.h>

#include "harness/record/json_number.h"
#include "harness/report/diagnose.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

std::string text(const oj& j, const char* k, const std::string& def = "?") {
  if (!j.is_object() || !j.contains(k)) return def;
  return j[k].is_string() ? j[k].get<std::string>() : j[k].dump();
}

// Markdown table cells must not contain a bare '|'.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string point_title(const oj& p) {
  const auto& par = p["params"];
  const bool decode = text(par, "phase") == "decode";
  return fmt::format("{} {} batch={} {}={} tp={} {} {}", text(par, "model"), text(par, "phase"),
                     text(par, "batch"), decode ? "context" : "prompt",
                     text(par, decode ? "context" : "prompt"), text(par, "tp"), text(par, "dtype"),
                     text(par, "backend"));
}

std::string context_section(const oj& r) {
  const oj& c = r.value("context", oj::object());
  const oj& v = c.value("versions", oj::object());
  std::string argv;
  for (const auto& a : c.value("argv", oj::array()))
    argv += (argv.empty() ? "" : " ") + a.get<std::string>();
  std::string hosts;
  for (const auto& h : c.value("hosts", oj::array()))
    hosts += (hosts.empty() ? "" : ", ") + h.get<std::string>();
  std::string out;
  out += fmt::format("- command: `{}`\n", argv.empty() ? "?" : argv);
  out += fmt::format(
      "- date: {}; tpbench {} (git {}); hosts: {}; world size {}; ranks per core "
      "{}\n",
      text(c, "date"), text(v, "tpbench"), text(v, "git_sha"), hosts.empty() ? "?" : hosts,
      text(c, "world_size"), text(c, "ranks_per_core"));
  const oj& d = c.value("device", oj::object());
  out += fmt::format("- device: {} ({} backend); MPI: {}; BLAS: {}\n", text(d, "name"),
                     text(d, "backend"), text(v, "mpi", "-"), text(v, "blas", "-"));
  return out;
}

std::string summary_table(const oj& points) {
  std::string out =
      "| # | point | status | step p50 (ms) | p95 (ms) | tokens/s | occupancy | busy | MBU | MFU "
      "| MFU ceiling | wait % | straggler (excess) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  int i = 0;
  for (const auto& p : points) {
    const std::string status = text(p, "status");
    if (status != "ok") {
      out += fmt::format("| {} | {} | {}: {} | | | | | | | | | | |\n", i++, cell(point_title(p)),
                         status, cell(text(p, "reason", "")));
      continue;
    }
    const oj& m = p["metrics"];
    const oj& st = p["straggler"];
    out += fmt::format(
        "| {} | {} | ok | {:.3f} | {:.3f} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.4f} | {:.4f} "
        "| {:.1f} | rank {} ({:+.3f}) |\n",
        i++, cell(point_title(p)), json_number(m["step_time_s"], "p50") * 1e3,
        json_number(m["step_time_s"], "p95") * 1e3, json_number(m, "tokens_per_s"),
        json_number(m, "occupancy_sampled"), json_number(m, "busy_fraction"), json_number(m, "mbu"),
        json_number(m, "mfu"), json_number(m, "mfu_ceiling"),
        100 * json_number(p["collectives"], "wait_fraction"), text(st, "rank"),
        json_number(st, "excess_compute_fraction"));
  }
  return out;
}

std::string point_section(const oj& p, int index) {
  std::string out = fmt::format("\n### Point {}: {}\n\n", index, point_title(p));
  if (text(p, "status") != "ok") {
    out += fmt::format("Status **{}**: {}\n", text(p, "status"), text(p, "reason", ""));
  } else {
    const oj& m = p["metrics"];
    out += fmt::format(
        "Intensity {:.2f} FLOP/B against a ridge of {:.2f} gives an MFU ceiling of {:.4f}; "
        "roofline fraction {:.3f}. Peaks: {:.3g} FLOP/s, {:.3g} B/s ({}).\n\n",
        json_number(m, "intensity"), json_number(m, "ridge"), json_number(m, "mfu_ceiling"),
        json_number(m, "roofline_fraction"), json_number(m["peaks"], "flops"),
        json_number(m["peaks"], "bw"), cell(text(m["peaks"], "source")));
    const int straggler = p["straggler"].value("rank", -1);
    out +=
        "| rank | group | step p50 (ms) | occupancy | busy | useful | host gap | MBU | MFU | "
        "compute (s) | wait (s) | transfer (s) | arrived last | off-core |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : p["ranks"]) {
      const int rank = r.value("rank", -1);
      const std::string off =
          r.contains("host_thread")
              ? fmt::format("{:.1f}%", 100 * json_number(r["host_thread"], "descheduled_fraction"))
              : "-";
      out += fmt::format(
          "| {}{} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.5f} | {:.4f} | "
          "{:.4f} | {:.4f} | {} | {} |\n",
          rank, rank == straggler ? " (straggler)" : "", text(r, "group"),
          json_number(r, "step_time_p50_s") * 1e3, json_number(r, "occupancy_sampled"),
          json_number(r, "busy_fraction"), json_number(r, "useful_fraction"),
          json_number(r, "host_gap_fraction"), json_number(r, "mbu"), json_number(r, "mfu"),
          json_number(r, "compute_s"), json_number(r, "wait_s"), json_number(r, "transfer_s"),
          text(r, "arrived_last"), off);
    }
    if (p.contains("verification"))
      out += fmt::format(
          "\nVerification against the unsharded reference: {} (max abs err {:.3g}, "
          "tolerance {:.3g}).\n",
          p["verification"].value("passed", false) ? "passed" : "**FAILED**",
          json_number(p["verification"], "max_abs_err"),
          json_number(p["verification"], "tolerance"));
  }
  out += "\nDiagnosis (the article's order):\n\n";
  for (const auto& v : diagnose_point(p))
    out += fmt::format("- [{}] **{}** {}: {}\n", v.order, v.level, v.topic, v.text);
  return out;
}

}  // namespace

std::string report_markdown(const std::vector<ReportInput>& runs,
                            const std::vector<std::string>& plots, const std::string& plots_note) {
  std::string out =
      "# tpbench report\n\nEvery number below is read from the results files named "
      "in each section; nothing is recomputed. Occupancy (the dashboard's \"GPU "
      "util\") is shown next to MBU and MFU because it is not efficiency.\n";
  for (const auto& run : runs) {
    const oj& r = run.results;
    const oj& points = r["points"];
    out += fmt::format("\n## {}\n\n", run.path);
    out += context_section(r);
    out += fmt::format("\n{} point(s).\n\n", points.size());
    out += summary_table(points);
    for (std::size_t i = 0; i < points.size(); ++i)
      out += point_section(points[i], static_cast<int>(i));
    const auto sweep = diagnose_sweep(points);
    if (!sweep.empty()) {
      out += "\n### Across points\n\n";
      for (const auto& v : sweep)
        out += fmt::format("- [{}] **{}** {}: {}\n", v.order, v.level, v.topic, v.text);
    }
  }
  out += "\n## Plots\n\n" + plots_note + "\n";
  for (const auto& f : plots) out += fmt::format("\n![{}]({})\n", f, f);
  return out;
}

}  // namespace tpb
