// report.md: a results document rendered for people. Every number is read from the results
// (nothing is recomputed), and the diagnosis is the same one `diagnose` prints.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

struct ReportInput {
  std::string path;                // as given on the command line
  nlohmann::ordered_json results;  // the results document
};

// `plots`: image file names (relative to report.md) to embed, or empty; `plots_note`: one
// line saying how the plots were made, or why there are none.
std::string report_markdown(const std::vector<ReportInput>& runs,
                            const std::vector<std::string>& plots, const std::string& plots_note);

}  // namespace tpb
