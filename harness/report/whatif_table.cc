// Formatting only: every figure comes from the record.
#include "harness/report/whatif_table.h"

#include <fmt/format.h>

namespace tpb {

namespace {

std::string pct(const std::optional<double>& cf, const std::optional<double>& m) {
  if (!cf || !m || *m == 0) return "–";
  return fmt::format("{:+.1f}%", (*cf / *m - 1.0) * 100.0);
}

std::string ms(const std::optional<double>& s) {
  return s ? fmt::format("{:.2f}", *s * 1e3) : "–";
}

std::string num(const std::optional<double>& v, const char* f) {
  return v ? fmt::format(fmt::runtime(f), *v) : "–";
}

std::string words(const std::string& name) {
  if (name == "no_straggler")
    return "removing the straggler's extra time (its compute and host work)";
  if (name == "no_host_gap") return "removing the host gaps";
  if (name == "no_jitter") return "removing the jitter";
  if (name == "chunked_prefill") return "chunking the prefill";
  if (name == "kv_budget") return "a bigger KV cache";
  if (name == "max_batch") return "a larger running batch";
  if (name == "topology") return "the other interconnect";
  if (name == "fewer_kernels") return "fewer, fused kernels";
  return name;
}

}  // namespace

std::string whatif_table_md(const WhatifRecord& w) {
  std::string s =
      "| point | rank | fix | tokens/s measured → fixed | Δ | p95 ITL ms measured → fixed | "
      "p95 TTFT ms measured → fixed | p99 excess removed | steps | replay error | inputs | "
      "reason |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  int last_point = -1, rank = 0;
  for (const Counterfactual& c : w.counterfactuals) {
    rank = c.point == last_point ? rank + 1 : 1;
    last_point = c.point;
    const bool fitted = !c.inputs.fitted.empty();
    s += fmt::format(
        "| {} | {} | {} | {} → {} | {} | {} → {} | {} → {} | {} | {} | {} | {} | {} |\n", c.point,
        rank, c.name, num(c.measured.tokens_per_s, "{:.1f}"), num(c.figures.tokens_per_s, "{:.1f}"),
        pct(c.figures.tokens_per_s, c.measured.tokens_per_s), ms(c.measured.itl_p95_s),
        ms(c.figures.itl_p95_s), ms(c.measured.ttft_p95_s), ms(c.figures.ttft_p95_s),
        num(c.p99_excess_removed, "{:.2f}"), c.inputs.steps,
        c.inputs.replay_error ? fmt::format("{:.2f}%", *c.inputs.replay_error * 100) : "–",
        c.inputs.measured.empty() ? "–"
        : fitted                  ? "measured + fitted"
                                  : "measured, replayed",
        c.reason.empty() ? "" : c.reason);
  }
  return s;
}

std::optional<std::string> whatif_top_fix(const WhatifRecord& w, int point) {
  const Counterfactual* best = nullptr;
  for (const Counterfactual& c : w.counterfactuals) {
    if (c.point != point || !c.figures.tokens_per_s || !c.measured.tokens_per_s) continue;
    if (*c.figures.tokens_per_s <= *c.measured.tokens_per_s) continue;
    if (!best || *c.figures.tokens_per_s > *best->figures.tokens_per_s) best = &c;
  }
  if (!best) return std::nullopt;
  std::string s =
      fmt::format("{} ({}) would raise tokens/s by {:.1f}%", words(best->name), best->name,
                  (*best->figures.tokens_per_s / *best->measured.tokens_per_s - 1) * 100);
  if (best->figures.itl_p95_s && best->measured.itl_p95_s)
    s += fmt::format(" and take p95 ITL from {:.2f} to {:.2f} ms", *best->measured.itl_p95_s * 1e3,
                     *best->figures.itl_p95_s * 1e3);
  s += fmt::format(" (replayed from {} measured steps{})", best->inputs.steps,
                   best->inputs.fit_error ? fmt::format(", through a step law fitted to {:.1f}%",
                                                        *best->inputs.fit_error * 100)
                                          : "");
  return s;
}

}  // namespace tpb
