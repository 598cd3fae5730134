// Milliseconds for latencies, as vLLM's benchmark prints them; "-" for a figure that is null.
#include "harness/report/serve/serve_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tpb {

namespace {

std::string ms(double s) {
  return std::isfinite(s) ? fmt::format("{:.1f}", s * 1e3) : "-";
}

std::string num(double x, const char* f = "{:.1f}") {
  return std::isfinite(x) ? fmt::format(fmt::runtime(f), x) : "-";
}

}  // namespace

std::string format_serve_header(const std::string& axis) {
  return fmt::format(
             "{:>11} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}\n",
             axis, "status", "req/s", "out_tok/s", "tot_tok/s", "ttft_p50", "ttft_p99", "tpot_p50",
             "itl_p50", "itl_p95", "itl_p99", "preem", "steps") +
         fmt::format(
             "{:>11} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}\n", "",
             "", "", "", "", "ms", "ms", "ms", "ms", "ms", "ms", "", "");
}

std::string cost_text(const CostPerMtok& c) {
  const auto usd = [](const Nullable<double>& v) {
    return v ? fmt::format("${:.4g}", *v) : std::string("null");
  };
  std::string t =
      fmt::format("{} per million output tokens, {} per million tokens ({} GPUs at ${:g}/h, {})",
                  usd(c.output_usd), usd(c.total_usd), c.gpus, c.usd_per_gpu_hour, c.price_source);
  return c.reason ? t + ": " + *c.reason : t;
}

std::string format_serve_row(const PointRecord& p) {
  const double x = p.params.serve ? p.params.serve->x : 0;
  if (!p.metrics || !p.metrics->ttft_s || !p.serve)
    return fmt::format("{:>11g} {:>6}  {}\n", x, point_status_name(p.status), p.reason);
  const MetricsRecord& m = *p.metrics;
  const std::string cost =
      m.cost_per_mtok ? fmt::format("{:>11} cost: {}\n", "", cost_text(*m.cost_per_mtok)) : "";
  return fmt::format(
             "{:>11g} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>6}\n", x,
             point_status_name(p.status), num(*m.request_throughput, "{:.2f}"),
             num(*m.output_tokens_per_s), num(*m.total_tokens_per_s), ms(m.ttft_s->p50),
             ms(m.ttft_s->p99), ms(m.tpot_s->p50), ms(m.itl_s->p50), ms(m.itl_s->p95),
             ms(m.itl_s->p99), p.serve->preemptions, p.serve->steps) +
         cost;
}

// "; SLO capacity (ttft=200, met by >= 90% of requests) up to 16: 3.2 requests/s, 0.4 per
// GPU; 32 misses (71%)".
std::string slo_capacity_text(const SloCapacityRecord& s) {
  std::string t =
      fmt::format("; SLO capacity ({}, met by >= {:.0f}% of requests) ", s.slo, 100 * s.target);
  t += std::isfinite(s.x)
           ? fmt::format("up to {:g} ({:.0f}%): {:.3g} requests/s, {:.3g} per GPU", s.x,
                         100 * s.attainment, s.goodput_requests_per_s, s.goodput_per_gpu)
           : std::string("none: even the lightest load misses");
  if (s.cost_per_mtok) t += ", at " + cost_text(*s.cost_per_mtok);
  t += std::isfinite(s.next_x)
           ? fmt::format("; {:g} misses ({:.0f}%)", s.next_x, 100 * s.next_attainment)
           : std::string("; no load here misses");
  return t;
}

std::string format_curve_summary(const CurveRecord& c) {
  std::string s = "curve (" + c.x + "): free region ";
  s += std::isfinite(c.free_region.upto)
           ? fmt::format("up to {:g} (p95 ITL within {:.0f}% of the lightest load's)",
                         c.free_region.upto, c.free_region.threshold * 100)
           : "none";
  s += std::isfinite(c.knee.x) ? fmt::format("; knee at {:g} ({})", c.knee.x, c.knee.method)
                               : "; no knee found (" + c.knee.method + ")";
  s += c.memory_wall
           ? fmt::format("; memory wall at {:g}: {}", c.memory_wall->x, c.memory_wall->reason)
           : "; no memory wall in this range";
  if (c.slo_capacity) s += slo_capacity_text(*c.slo_capacity);
  return s + "\n";
}

std::string serve_curve_md(const std::optional<CurveRecord>& c) {
  if (!c) return "";
  std::string out = "\n### Serving curve\n\n" + format_curve_summary(*c);
  const bool priced = std::any_of(c->points.begin(), c->points.end(),
                                  [](const CurvePointRecord& p) { return p.cost_per_mtok; });
  if (!priced) return out;
  out += fmt::format(
      "\n| {} | total tokens/s | p95 ITL (ms) | $ per million output tokens | $ per million "
      "tokens | price |\n|---|---|---|---|---|---|\n",
      c->x);
  for (const CurvePointRecord& p : c->points) {
    const auto usd = [](const Nullable<double>& v) {
      return v ? fmt::format("{:.4g}", *v) : std::string("null");
    };
    const CostPerMtok* k = p.cost_per_mtok ? &*p.cost_per_mtok : nullptr;
    out += fmt::format(
        "| {:g} | {} | {} | {} | {} | {} |\n", p.x, num(p.total_tokens_per_s), ms(p.itl_p95_s),
        k ? usd(k->output_usd) : "-", k ? usd(k->total_usd) : "-",
        k ? fmt::format("{} GPUs at ${:g}/h ({})", k->gpus, k->usd_per_gpu_hour, k->price_source)
          : std::string("-"));
  }
  return out;
}

namespace {

// A late gap's prompt rows for report.md: "17: 4096" per row (a chunk "17: 256 after 512"), and
// "+N" for the rows not named; "–" when the step had none, or the log predates 1.22.0.
std::string prompts_cell(const LateTokenRecord& w) {
  if (!w.prefilled || w.prefilled->empty()) return "–";
  std::string s;
  for (const PrefillRowRecord& r : *w.prefilled) {
    if (!s.empty()) s += ", ";
    s += r.cached > 0 ? fmt::format("{}: {} after {}", r.request, r.tokens, r.cached)
                      : fmt::format("{}: {}", r.request, r.tokens);
  }
  const int64_t rest = w.prefill_requests.value_or(0) - static_cast<int64_t>(w.prefilled->size());
  return rest > 0 ? s + fmt::format(" +{}", rest) : s;
}

}  // namespace

std::string late_tokens_md(const PointRecord& p) {
  const auto& a = p.metrics ? p.metrics->itl_attribution : std::nullopt;
  if (!a || !a->worst || a->worst->empty()) return "";
  std::string out =
      "\nThe longest inter-token gaps, one per step, each named by its largest part "
      "(`metrics.itl_attribution.worst`), with the prompts its step prefilled "
      "(request: tokens):\n\n"
      "| gap (ms) | request | token | step | tokens it delayed | largest part | its ms | late rank "
      "| prompts in the step |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const LateTokenRecord& w : *a->worst)
    out += fmt::format("| {:.2f} | {} | {} | {} | {} | {} | {:.2f} | {} | {} |\n", w.gap_s * 1e3,
                       w.request, w.token, w.step, w.tokens, w.part, w.part_s * 1e3,
                       w.rank ? std::to_string(*w.rank) : "–", prompts_cell(w));
  return out;
}

}  // namespace tpb
