// Label values escape backslash, double quote and newline (the format's three escapes); a
// quantile is the last label, as Prometheus writes summaries.
#include "harness/report/export/openmetrics.h"

#include <fmt/format.h>

#include <cmath>

namespace tpb {

namespace {

std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string label_text(const Labels& point, const Labels* rank, const std::string& quantile) {
  std::string out;
  const auto put = [&](const std::string& k, const std::string& v) {
    out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", k, escaped(v));
  };
  for (const auto& [k, v] : point) put(k, v);
  if (rank)
    for (const auto& [k, v] : *rank) put(k, v);
  if (!quantile.empty()) put("quantile", quantile);
  return "{" + out + "}";
}

void sample_lines(std::string& out, const MetricFamily& f, std::size_t family, const Labels& point,
                  const Labels* rank, const std::vector<MetricValue>& values) {
  for (const MetricValue& v : values)
    if (v.family == family)
      out += fmt::format("{}{}{} {}\n", f.name, v.suffix, label_text(point, rank, v.quantile),
                         metric_number(v.value));
}

}  // namespace

std::string metric_number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string openmetrics_text(const std::vector<ExportPoint>& points) {
  const auto& families = metric_families();
  std::string out;
  for (std::size_t f = 0; f < families.size(); ++f) {
    std::string lines;
    for (const ExportPoint& p : points) {
      if (!families[f].per_rank) sample_lines(lines, families[f], f, p.labels, nullptr, p.values);
      for (const ExportRank& r : p.ranks)
        if (families[f].per_rank)
          sample_lines(lines, families[f], f, p.labels, &r.labels, r.values);
    }
    if (lines.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", families[f].name, families[f].help,
                       families[f].name, families[f].type);
    out += lines;
  }
  return out + "# EOF\n";
}

}  // namespace tpb
