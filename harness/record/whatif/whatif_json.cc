// {"counterfactuals": [{"name", "point", "tokens_per_s", "ttft_p95_s", "itl_p50_s",
// "itl_p95_s", "itl_p99_s", "goodput", ("cost_per_mtok_output_usd", priced serve points), "delta",
// "p99_excess_removed", "inputs", "reason", "itl_cdf"}]}: itl_cdf holds the ITL's p0, p5, ...,
// p100, fixed and measured, for the plot. delta holds each figure's relative change against the
// measured steps, and those measured figures under "measured"; a figure that cannot be computed is
// null.
#include "harness/record/whatif/whatif_json.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

oj opt(const std::optional<double>& v) {
  return v ? oj(*v) : oj(nullptr);
}

std::optional<double> opt_from(const oj& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<double>();
}

std::optional<double> rel(const std::optional<double>& cf, const std::optional<double>& m) {
  if (!cf || !m || *m == 0) return std::nullopt;
  return *cf / *m - 1.0;
}

// `f(key, counterfactual figure, measured figure)` for each figure, in the schema's order.
template <class F>
void each_figure(const WhatifFigures& a, const WhatifFigures& b, F f) {
  f("tokens_per_s", a.tokens_per_s, b.tokens_per_s);
  f("ttft_p95_s", a.ttft_p95_s, b.ttft_p95_s);
  f("itl_p50_s", a.itl_p50_s, b.itl_p50_s);
  f("itl_p95_s", a.itl_p95_s, b.itl_p95_s);
  f("itl_p99_s", a.itl_p99_s, b.itl_p99_s);
  f("goodput", a.goodput, b.goodput);
  // 1.25.0: a priced serve point only, so an unpriced run's counterfactuals keep their keys.
  if (a.cost_per_mtok_usd || b.cost_per_mtok_usd)
    f("cost_per_mtok_output_usd", a.cost_per_mtok_usd, b.cost_per_mtok_usd);
}

oj inputs_json(const WhatifInputs& in) {
  return {{"measured", in.measured}, {"modelled", in.modelled},
          {"fitted", in.fitted},     {"fit_error", opt(in.fit_error)},
          {"steps", in.steps},       {"replay_error", opt(in.replay_error)}};
}

oj counterfactual_json(const Counterfactual& c) {
  oj j = {{"name", c.name}, {"point", c.point}};
  oj delta = oj::object(), measured = oj::object();
  each_figure(c.figures, c.measured, [&](const char* k, const auto& cf, const auto& m) {
    j[k] = opt(cf);
    delta[k] = opt(rel(cf, m));
    measured[k] = opt(m);
  });
  delta["measured"] = measured;
  j["delta"] = delta;
  j["p99_excess_removed"] = opt(c.p99_excess_removed);
  j["inputs"] = inputs_json(c.inputs);
  j["reason"] = c.reason.empty() ? oj(nullptr) : oj(c.reason);
  if (c.figures.itl_quantiles_s.empty() || c.measured.itl_quantiles_s.empty()) {
    j["itl_cdf"] = nullptr;
  } else {
    oj p = oj::array();
    for (int q = 0; q <= 100; q += 5) p.push_back(q);
    j["itl_cdf"] = {{"p", p},
                    {"counterfactual", c.figures.itl_quantiles_s},
                    {"measured", c.measured.itl_quantiles_s}};
  }
  return j;
}

WhatifFigures figures_from(const oj& j) {
  WhatifFigures f;
  f.tokens_per_s = opt_from(j, "tokens_per_s");
  f.ttft_p95_s = opt_from(j, "ttft_p95_s");
  f.itl_p50_s = opt_from(j, "itl_p50_s");
  f.itl_p95_s = opt_from(j, "itl_p95_s");
  f.itl_p99_s = opt_from(j, "itl_p99_s");
  f.goodput = opt_from(j, "goodput");
  f.cost_per_mtok_usd = opt_from(j, "cost_per_mtok_output_usd");
  return f;
}

Counterfactual counterfactual_from(const oj& j) {
  Counterfactual c;
  c.name = j.value("name", "");
  c.point = j.value("point", 0);
  c.figures = figures_from(j);
  if (j.contains("delta") && j["delta"].contains("measured"))
    c.measured = figures_from(j["delta"]["measured"]);
  c.p99_excess_removed = opt_from(j, "p99_excess_removed");
  if (j.contains("inputs")) {
    const oj& in = j["inputs"];
    c.inputs.measured = in.value("measured", std::vector<std::string>{});
    c.inputs.modelled = in.value("modelled", std::vector<std::string>{});
    c.inputs.fitted = in.value("fitted", std::vector<std::string>{});
    c.inputs.fit_error = opt_from(in, "fit_error");
    c.inputs.steps = in.value("steps", 0);
    c.inputs.replay_error = opt_from(in, "replay_error");
  }
  if (j.contains("reason") && j["reason"].is_string()) c.reason = j["reason"].get<std::string>();
  if (j.contains("itl_cdf") && j["itl_cdf"].is_object()) {
    c.figures.itl_quantiles_s = j["itl_cdf"].value("counterfactual", std::vector<double>{});
    c.measured.itl_quantiles_s = j["itl_cdf"].value("measured", std::vector<double>{});
  }
  return c;
}

}  // namespace

oj to_json(const WhatifRecord& w) {
  oj list = oj::array();
  for (const Counterfactual& c : w.counterfactuals) list.push_back(counterfactual_json(c));
  return {{"counterfactuals", list}};
}

WhatifRecord whatif_from_json(const oj& j) {
  WhatifRecord w;
  if (j.contains("counterfactuals") && j["counterfactuals"].is_array())
    for (const oj& c : j["counterfactuals"]) w.counterfactuals.push_back(counterfactual_from(c));
  return w;
}

const char* whatif_section() {
  return "whatif";
}

}  // namespace tpb
