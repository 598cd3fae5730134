// `tpbench serve --resume DIR`: the loads an interrupted serve run finished. points.jsonl is the
// ledger, as for a sweep (harness/drive/sweep_resume.h); the step and request logs are appended
// before their point's ledger line, so lines of a point that never reached the ledger are
// dropped from them, and that load runs again.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/config/serve_spec.h"
#include "harness/drive/sweep_resume.h"
#include "harness/serve/curve.h"

namespace tpb {

// Throws BadInput naming --resume when DIR's results were made with other serve options than
// `config` (the run's resolved config; `out` aside).
void check_same_serve_config(const std::string& dir, const nlohmann::ordered_json& config);

// Per load of `spec`, whether the ledger holds its finished point.
std::vector<char> finished_loads(const ServeSpec& spec, const ResumeLedger& ledger);

// Keeps in DIR/steps.jsonl and DIR/requests.jsonl only the lines of finished loads (atomic).
void trim_serve_logs(const std::string& dir, const std::vector<char>& done);

// A recorded serve point's place on the curve (for finished points and new ones alike).
CurveInput curve_input(const PointRecord& p);

}  // namespace tpb
