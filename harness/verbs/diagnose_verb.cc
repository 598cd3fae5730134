// `tpbench diagnose RESULTS...`: verdicts in the article's order for every point of each file.
#include <iostream>

#include "base/errors.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_doc_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/results_reader.h"
#include "harness/report/diagnose.h"
#include "harness/report/serve/serve_table.h"
#include "harness/report/whatif_table.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// The point's verdicts (a model point's; other kinds have none) and, where `tpbench whatif`
// left its section, the fix that buys the most.
std::vector<Verdict> point_verdicts(const ResultsDoc& doc, std::size_t point) {
  const ResultsPoint& p = doc.points[point];
  std::vector<Verdict> v = p.model ? diagnose_point(*p.model) : std::vector<Verdict>{};
  if (!doc.whatif) return v;
  const auto fix = whatif_top_fix(*doc.whatif, static_cast<int>(point));
  if (fix) v.push_back({6, "whatif", "note", "top fix: " + *fix, "top_fix"});
  return v;
}

FileDiagnosis file_diagnosis(const std::string& path, const ResultsDoc& doc) {
  FileDiagnosis f{results_file_of(path), {}, diagnose_sweep(model_points(doc)), doc.curve};
  for (std::size_t k = 0; k < doc.points.size(); ++k) {
    const PointHead& h = doc.points[k].head;
    f.points.push_back({static_cast<int64_t>(k), h.params, h.status, point_verdicts(doc, k)});
  }
  return f;
}

}  // namespace

int verb_diagnose(const CliResult& cli, const World& w) {
  std::vector<ResultsDoc> docs;
  // Every rank loads, so a bad path is one agreed error however it was launched.
  agree(w.comm, [&] {
    if (cli.positional.empty())
      throw BadInput("diagnose: give one or more RESULTS directories or files");
    for (const auto& path : cli.positional) docs.push_back(load_results_doc(path, "diagnose"));
  });
  if (w.rank != 0) return 0;
  std::vector<FileDiagnosis> files;
  for (std::size_t i = 0; i < docs.size(); ++i)
    files.push_back(file_diagnosis(cli.positional[i], docs[i]));
  if (cli.config.value("json", false)) {
    std::cout << to_json(files).dump(2) << "\n";
    return 0;
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    std::cout << "== " << files[i].file << "\n";
    for (std::size_t k = 0; k < docs[i].points.size(); ++k) {
      const PointHead& h = docs[i].points[k].head;
      std::cout << "point " << h.phase << " batch=" << h.batch << " tp=" << h.tp
                << " status=" << h.status << "\n"
                << format_verdicts(files[i].points[k].verdicts);
    }
    if (!files[i].across_points.empty())
      std::cout << "across points\n" << format_verdicts(files[i].across_points);
    if (docs[i].curve) std::cout << format_curve_summary(*docs[i].curve);
  }
  return 0;
}

}  // namespace tpb
