// `tpbench diagnose RESULTS...`: verdicts in the article's order for every point of each file.
#include <iostream>

#include "base/errors.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_json.h"
#include "harness/record/results_reader.h"
#include "harness/record/whatif/whatif_json.h"
#include "harness/report/diagnose.h"
#include "harness/report/serve/serve_table.h"
#include "harness/report/whatif_table.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// The point's verdicts and, where `tpbench whatif` left its section, the fix that buys the most.
std::vector<Verdict> with_top_fix(const nlohmann::ordered_json& doc, std::size_t point,
                                  std::vector<Verdict> v) {
  if (!doc.contains(whatif_section())) return v;
  const auto fix = whatif_top_fix(whatif_from_json(doc[whatif_section()]), static_cast<int>(point));
  if (fix) v.push_back({6, "whatif", "note", "top fix: " + *fix, "top_fix"});
  return v;
}

// {"files": [{"file", "points": [{"point", "params", "status", "verdicts"}], "across_points"}]}
nlohmann::ordered_json diagnosis_json(const std::vector<std::string>& paths,
                                      const std::vector<nlohmann::ordered_json>& docs) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < docs.size(); ++i) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    std::size_t k = 0;
    for (const auto& p : docs[i]["points"])
      points.push_back({{"point", k},
                        {"params", p.value("params", nlohmann::ordered_json::object())},
                        {"status", p.value("status", "?")},
                        {"verdicts", to_json(with_top_fix(docs[i], k, diagnose_point(p)))}}),
          ++k;
    files.push_back({{"file", results_file_of(paths[i])},
                     {"points", points},
                     {"across_points", to_json(diagnose_sweep(docs[i]["points"]))}});
    if (docs[i].contains(curve_section())) files.back()["curve"] = docs[i][curve_section()];
  }
  return {{"files", files}};
}

}  // namespace

int verb_diagnose(const CliResult& cli, const World& w) {
  std::vector<nlohmann::ordered_json> docs;
  // Every rank loads, so a bad path is one agreed error however it was launched.
  agree(w.comm, [&] {
    if (cli.positional.empty())
      throw BadInput("diagnose: give one or more RESULTS directories or files");
    for (const auto& path : cli.positional) docs.push_back(load_results(path, "diagnose"));
  });
  if (w.rank != 0) return 0;
  if (cli.config.value("json", false)) {
    std::cout << diagnosis_json(cli.positional, docs).dump(2) << "\n";
    return 0;
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const std::string file = results_file_of(cli.positional[i]);
    const nlohmann::ordered_json& r = docs[i];
    std::cout << "== " << file << "\n";
    std::size_t k = 0;
    for (const auto& p : r["points"]) {
      const auto& par = p["params"];
      std::cout << "point " << par.value("phase", "?") << " batch=" << par.value("batch", 0)
                << " tp=" << par.value("tp", 0) << " status=" << p.value("status", "?") << "\n"
                << format_verdicts(with_top_fix(r, k++, diagnose_point(p)));
    }
    const auto sweep = diagnose_sweep(r["points"]);
    if (!sweep.empty()) std::cout << "across points\n" << format_verdicts(sweep);
    if (r.contains(curve_section()))
      std::cout << format_curve_summary(curve_from_json(r[curve_section()]));
  }
  return 0;
}

}  // namespace tpb
