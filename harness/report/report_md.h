// report.md: a results document rendered for people. Every number is read from the results
// (nothing is recomputed), and the diagnosis is the same one `diagnose` prints.
#pragma once
#include <string>
#include <vector>

#include "harness/record/results_doc.h"
#include "harness/report/plots.h"

namespace tpb {

struct ReportInput {
  std::string path;  // as given on the command line
  ResultsDoc doc;
};

// `plots`: the plots to link (their files relative to report.md), each with its line saying
// what it shows or why it has no data, and the note saying how they were made or why there
// are none.
std::string report_markdown(const std::vector<ReportInput>& runs, const PlotOutcome& plots);

}  // namespace tpb
