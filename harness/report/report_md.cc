// Layout follows the article's reading order: what ran and on what (context), the summary of
// every point (occupancy next to MBU, MFU and its ceiling), then each point's ranks (who waits
// for whom), its warnings and the diagnosis in the article's debugging order.
#include "harness/report/report_md.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "harness/record/json/results_json.h"
#include "harness/report/diagnose.h"
#include "harness/report/serve/serve_table.h"
#include "harness/report/whatif_table.h"

namespace tpb {

namespace {

// Markdown table cells must not contain a bare '|'.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// A point as report.md shows it. One that is not a model point (in a run that mixes kinds, or
// one tpbench did not write) keeps its row and section, so the numbering matches the results
// file, but they are built from a default record with the point's own status and reason: the
// model figures it does not have read as 0 and its title as placeholders, and it gets no
// diagnosis.
struct ShownPoint {
  PointRecord rec;
  std::string status;
  bool model = false;
};

ShownPoint shown_point(const ResultsPoint& p) {
  if (p.model) return {*p.model, point_status_name(p.model->status), true};
  ShownPoint sp{PointRecord{}, p.head.status, false};
  sp.rec.reason = p.head.reason;
  return sp;
}

// The params outside the title that differ between the model points (schema order): each
// point's title shows them, so two points of a sweep that differ only in topology or inject
// never read the same. How long a point ran (steps, warmup; a serve point's steps are an
// outcome) is no axis.
std::vector<std::string> varying_params(const std::vector<ShownPoint>& points) {
  std::vector<std::string> keys;  // in the order first seen: the schema's
  std::map<std::string, std::set<std::string>> values;
  std::map<std::string, std::size_t> count;
  std::size_t model = 0;
  for (const ShownPoint& sp : points) {
    if (!sp.model) continue;
    ++model;
    for (const auto& [k, v] : param_texts(sp.rec.params)) {
      if (param_in_point_title(k) || param_omitted_from_heading(k)) continue;
      if (!values.count(k)) keys.push_back(k);
      values[k].insert(v);
      ++count[k];
    }
  }
  std::vector<std::string> out;
  for (const auto& k : keys)  // a field some points lack (lm_head, mpi_mode) varies too
    if (values[k].size() > 1 || count[k] < model) out.push_back(k);
  return out;
}

std::string point_title(const ShownPoint& sp, const std::vector<std::string>& axes) {
  if (!sp.model) return "? ? batch=? prompt=? tp=? ? ?";
  const PointParams& par = sp.rec.params;
  const bool decode = par.phase == "decode";
  // A serve point's load is its axis, where a fixed-batch point has its context or prompt.
  const std::string shape = par.serve ? fmt::format("{}={:g}", par.serve->load, par.serve->x)
                                      : fmt::format("{}={}", decode ? "context" : "prompt",
                                                    decode ? par.context : par.prompt);
  std::string title = fmt::format("{} {} batch={} {} tp={} {} {}", par.model, par.phase, par.batch,
                                  shape, par.tp, par.dtype, par.backend);
  for (const auto& [k, v] : param_texts(par))
    if (std::find(axes.begin(), axes.end(), k) != axes.end()) title += " " + k + "=" + v;
  return title;
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out.empty() ? "?" : out;
}

std::string context_section(const std::optional<RunContextRecord>& context) {
  if (!context) return "- context: absent, or not one tpbench wrote\n";
  const RunContextRecord& c = *context;
  const VersionsRecord& v = c.versions;
  std::string out = fmt::format("- command: `{}`\n", joined(c.argv, " "));
  out += fmt::format(
      "- date: {}; tpbench {} (git {}); hosts: {}; world size {}; ranks per core {}\n", c.date,
      v.tpbench, v.git_sha, joined(c.hosts, ", "), c.world_size, c.ranks_per_core);
  out += fmt::format("- device: {} ({} backend); MPI: {}; BLAS: {}\n", c.device.name,
                     c.device.backend, v.mpi, v.blas);
  return out;
}

// An absent block reads as a default one, so its figures show as 0, as they did when this
// printer read absent fields as 0; an absent straggler shows its rank as "?".
std::string straggler_rank_text(const PointRecord& p) {
  if (!p.straggler) return "?";
  return p.straggler->rank ? std::to_string(*p.straggler->rank) : "none (within clock uncertainty)";
}

std::string summary_row(const ShownPoint& sp, int i, const std::vector<std::string>& axes) {
  const PointRecord& p = sp.rec;
  if (sp.status != "ok")
    return fmt::format("| {} | {} | {}: {} | | | | | | | | | | |\n", i, cell(point_title(sp, axes)),
                       sp.status, cell(p.reason));
  const MetricsRecord m = p.metrics.value_or(MetricsRecord{});
  const CollectivesRecord c = p.collectives.value_or(CollectivesRecord{});
  const StragglerRecord st = p.straggler.value_or(StragglerRecord{});
  return fmt::format(
      "| {} | {} | ok | {:.3f} | {:.3f} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.4f} | {:.4f} "
      "| {:.1f} | rank {} ({:+.3f}) |\n",
      i, cell(point_title(sp, axes)), m.step_time_s.p50 * 1e3, m.step_time_s.p95 * 1e3,
      m.tokens_per_s, m.occupancy_sampled, m.busy_fraction, m.mbu, m.mfu, m.mfu_ceiling,
      100 * c.wait_fraction, straggler_rank_text(p), st.excess_compute_fraction);
}

std::string summary_table(const std::vector<ShownPoint>& points,
                          const std::vector<std::string>& axes) {
  std::string out =
      "| # | point | status | step p50 (ms) | p95 (ms) | tokens/s | occupancy | busy | MBU | MFU "
      "| MFU ceiling | wait % | straggler (excess) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  int i = 0;
  for (const auto& p : points) out += summary_row(p, i++, axes);
  return out;
}

std::string rank_row(const RankRecord& r, int64_t straggler) {
  const std::string off =
      r.host_thread ? fmt::format("{:.1f}%", 100 * r.host_thread->descheduled_fraction) : "-";
  return fmt::format(
      "| {}{} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.5f} | {:.4f} | "
      "{:.4f} | {:.4f} | {} | {} |\n",
      r.rank, r.rank == straggler ? " (straggler)" : "", r.group, r.step_time_p50_s * 1e3,
      r.occupancy_sampled, r.busy_fraction, r.useful_fraction, r.host_gap_fraction, r.mbu, r.mfu,
      r.compute_s, r.wait_s, r.transfer_s, r.arrived_last, off);
}

// The --check verdict: against the host fp64 reference (run, 1.12.0) or the unsharded step
// (serve), and at TP > 1 the sharded step against the unsharded one as well.
std::string verification_text(const VerificationRecord& v) {
  std::string out =
      fmt::format("\nVerification against the {}: {} (max abs err {:.3g}, tolerance {:.3g}).\n",
                  v.max_abs_ref ? "host fp64 reference" : "unsharded reference",
                  v.passed ? "passed" : "**FAILED**", v.max_abs_err, v.tolerance);
  if (const auto& s = v.sharded_vs_unsharded)
    out += fmt::format(
        "The sharded step against the unsharded tp=1 step: {} (max abs err {:.3g}, tolerance "
        "{:.3g}).\n",
        s->passed ? "passed" : "**FAILED**", s->max_abs_err, s->tolerance);
  return out;
}

std::string measured_section(const PointRecord& p) {
  const MetricsRecord m = p.metrics.value_or(MetricsRecord{});
  std::string out = fmt::format(
      "Intensity {:.2f} FLOP/B against a ridge of {:.2f} gives an MFU ceiling of {:.4f}; "
      "roofline fraction {:.3f}. Peaks: {:.3g} FLOP/s, {:.3g} B/s ({}).\n\n",
      m.intensity, m.ridge, m.mfu_ceiling, m.roofline_fraction, m.peaks.flops, m.peaks.bw,
      p.metrics ? cell(m.peaks.source) : "?");
  const int64_t straggler = p.straggler ? p.straggler->rank.value_or(-1) : -1;
  out +=
      "| rank | group | step p50 (ms) | occupancy | busy | useful | host gap | MBU | MFU | "
      "compute (s) | wait (s) | transfer (s) | arrived last | off-core |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : p.ranks.value_or(std::vector<RankRecord>{})) out += rank_row(r, straggler);
  out += late_tokens_md(p);
  if (p.verification) out += verification_text(*p.verification);
  return out;
}

std::string verdict_lines(const std::vector<Verdict>& verdicts) {
  return format_verdicts(verdicts, "- [{}] **{}** {}: {}\n");
}

std::string point_section(const ShownPoint& sp, int index, const std::vector<std::string>& axes) {
  std::string out = fmt::format("\n### Point {}: {}\n\n", index, point_title(sp, axes));
  if (sp.status != "ok")
    out += fmt::format("Status **{}**: {}\n", sp.status, sp.rec.reason);
  else
    out += measured_section(sp.rec);
  out += "\nDiagnosis (the article's order):\n\n";
  if (sp.model) out += verdict_lines(diagnose_point(sp.rec));
  return out;
}

// A `tpbench collectives` run: one row per message size, nccl-tests' columns plus skew and
// wait, which say whether the time was the link's or the ranks' arrival.
std::string coll_row(const CollPointRecord& p) {
  const CollParamsRecord& k = p.params;
  if (p.status != PointStatus::ok)
    return fmt::format("| {} | {} | {} | {}: {} | | | | | | | |\n", k.kind, k.bytes, k.dtype,
                       point_status_name(p.status), cell(p.reason));
  const CollMetricsRecord& m = p.metrics;
  return fmt::format(
      "| {} | {} | {} | ok | {:.2f} | {:.2f} | {:.3f} | {:.3f} | {:.2f} | {:.1f} | {} |\n", k.kind,
      k.bytes, k.dtype, m.time_s.mean * 1e6, m.time_s.p99 * 1e6, m.algbw_GBps, m.busbw_GBps,
      p.collectives.skew_s.p95 * 1e6, 100 * p.collectives.wait_fraction, m.wrong);
}

std::string coll_table(const std::vector<CollPointRecord>& points) {
  std::string out =
      "| kind | bytes | dtype | status | time (us) | p99 (us) | algbw (GB/s) | busbw (GB/s) | "
      "skew p95 (us) | wait % | wrong |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : points) out += coll_row(p);
  return out;
}

std::string model_run(const ResultsDoc& doc) {
  std::vector<ShownPoint> points;
  for (const ResultsPoint& p : doc.points) points.push_back(shown_point(p));
  const std::vector<std::string> axes = varying_params(points);
  std::string out = fmt::format("\n{} point(s).\n\n", points.size()) + summary_table(points, axes);
  for (std::size_t i = 0; i < points.size(); ++i)
    out += point_section(points[i], static_cast<int>(i), axes);
  out += serve_curve_md(doc.curve);
  const auto sweep = diagnose_sweep(model_points(doc));
  if (!sweep.empty()) out += "\n### Across points\n\n" + verdict_lines(sweep);
  return out;
}

// Each plot: its title and line, the PNG embedded and links to the SVG and the data file beside
// it; a plot with no data for these results says why instead.
std::string plots_section(const PlotOutcome& plots) {
  std::string out = "\n## Plots\n\n" + plots.note + "\n";
  for (const PlotEntry& p : plots.plots) {
    if (!p.missing.empty() || p.files.empty()) {
      out += fmt::format("\n**{}**: no data: {}.\n", p.title, p.missing);
      continue;
    }
    std::string links;
    for (const auto& f : p.files) {
      const std::string ext = f.substr(f.rfind('.') + 1);
      if (ext != "png")
        links +=
            fmt::format("{}[{}]({})", links.empty() ? "" : " · ", ext == "svg" ? ext : "data", f);
    }
    out += fmt::format("\n**{}**: {} ({})\n\n![{}]({})\n", p.title, p.what, links, p.title,
                       p.files.front());
  }
  return out;
}

}  // namespace

std::string report_markdown(const std::vector<ReportInput>& runs, const PlotOutcome& plots) {
  std::string out =
      "# tpbench report\n\nEvery number below is read from the results files named "
      "in each section; nothing is recomputed. Occupancy (the dashboard's \"GPU "
      "util\") is shown next to MBU and MFU because it is not efficiency.\n";
  for (const auto& run : runs) {
    out += fmt::format("\n## {}\n\n", run.path) + context_section(run.doc.context);
    if (const auto coll = collectives_points(run.doc))
      out += fmt::format("\n{} message size(s).\n\n", coll->size()) + coll_table(*coll);
    else
      out += model_run(run.doc);
    if (run.doc.whatif)
      out +=
          "\n### What fixing it buys (`tpbench whatif`)\n\nEach fix replayed on the point's "
          "measured steps (record: the results' `whatif` section), best gain first.\n\n" +
          whatif_table_md(*run.doc.whatif);
  }
  return out + plots_section(plots);
}

}  // namespace tpb
