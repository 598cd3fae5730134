#include "harness/report/export/export_csv.h"

#include <algorithm>
#include <map>

#include "harness/report/export/openmetrics.h"

namespace tpb {

namespace {

std::string field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string line(const std::vector<std::string>& cells) {
  std::string out;
  for (const auto& c : cells) out += (out.empty() ? "" : ",") + field(c);
  return out + "\n";
}

std::string column_of(const MetricValue& v) {
  std::string name = metric_families()[v.family].name;
  name = name.substr(name.find('_') + 1);  // without "tpbench_"
  return name + (v.quantile.empty() ? "" : "_q" + v.quantile) + v.suffix;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// Value columns in family order, each family's in first-seen order.
std::vector<std::string> value_columns(const std::vector<ExportPoint>& points) {
  std::vector<std::string> cols;
  for (std::size_t f = 0; f < metric_families().size(); ++f)
    for (const ExportPoint& p : points) {
      for (const MetricValue& v : p.values)
        if (v.family == f) add_unique(cols, column_of(v));
      for (const ExportRank& r : p.ranks)
        for (const MetricValue& v : r.values)
          if (v.family == f) add_unique(cols, column_of(v));
    }
  return cols;
}

std::string row(const std::vector<std::string>& label_cols, const std::vector<std::string>& cols,
                const ExportPoint& p, const ExportRank* r) {
  std::map<std::string, std::string> cell;
  for (const auto& [k, v] : p.labels) cell[k] = v;
  for (const MetricValue& v : p.values) cell[column_of(v)] = metric_number(v.value);
  if (r) {
    for (const auto& [k, v] : r->labels) cell[k] = v;
    for (const MetricValue& v : r->values) cell[column_of(v)] = metric_number(v.value);
  }
  std::vector<std::string> cells;
  for (const auto& c : label_cols) cells.push_back(cell[c]);
  for (const auto& c : cols) cells.push_back(cell[c]);
  return line(cells);
}

}  // namespace

std::string csv_text(const std::vector<ExportPoint>& points) {
  std::vector<std::string> label_cols;
  for (const ExportPoint& p : points) {
    for (const auto& [k, v] : p.labels) add_unique(label_cols, k);
    for (const ExportRank& r : p.ranks)
      for (const auto& [k, v] : r.labels) add_unique(label_cols, k);
  }
  const std::vector<std::string> cols = value_columns(points);
  std::vector<std::string> header = label_cols;
  header.insert(header.end(), cols.begin(), cols.end());
  std::string out = line(header);
  for (const ExportPoint& p : points) {
    if (p.ranks.empty()) out += row(label_cols, cols, p, nullptr);
    for (const ExportRank& r : p.ranks) out += row(label_cols, cols, p, &r);
  }
  return out;
}

}  // namespace tpb
