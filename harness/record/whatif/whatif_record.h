// What fixing each cause buys (tpbench whatif): one record per counterfactual per point, with
// the measured figures it is set against and which of its inputs were measured, modelled or
// fitted. whatif_json.h spells its fields; whatif_builder.h fills it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpb {

// Serving-style figures of a point; nullopt where the point cannot have them.
struct WhatifFigures {
  std::optional<double> tokens_per_s, ttft_p95_s, itl_p50_s, itl_p95_s, itl_p99_s, goodput;
  // (1.25.0) A priced serve point's: USD per million output tokens at tokens_per_s.
  std::optional<double> cost_per_mtok_usd;
  std::vector<double> itl_quantiles_s;  // the ITL's p0, p5, ..., p100 (empty: no ITL)
};

// p0, p5, ..., p100 of `v` (empty for an empty `v`), for the ITL CDF plot.
std::vector<double> itl_quantiles(const std::vector<double>& v);

struct WhatifInputs {
  std::vector<std::string> measured;  // taken from the run as recorded
  std::vector<std::string> modelled;  // the edit itself: what the counterfactual assumes
  std::vector<std::string> fitted;    // fitted on the run's steps (a serve point's step times)
  std::optional<double> fit_error;    // the fit's mean |fit - measured| / measured on those steps
  int steps = 0;                      // measured steps replayed
  // The replay's own error: a run point's |unchanged replay - measured| / measured, mean over
  // the steps; a serve point's largest relative difference between the figures of its rebuilt
  // run (the measured step times through the scheduler) and the measured ones.
  std::optional<double> replay_error;
};

struct Counterfactual {
  std::string name;        // no_straggler | no_host_gap | no_jitter | chunked_prefill | kv_budget |
                           // max_batch | topology | fewer_kernels
  int point = 0;           // index into the results' points
  WhatifFigures figures;   // the counterfactual's
  WhatifFigures measured;  // the same steps as measured, what `delta` is against
  // (measured p99 ITL - counterfactual p99) / (measured p99 - measured p50): the share of the
  // tail's excess over the median that the fix removes (above 1: it lowers the median too).
  std::optional<double> p99_excess_removed;
  WhatifInputs inputs;
  std::string reason;  // why a null figure is null ("" when none is)
};

// What the counterfactuals that need a choice are asked for (tpbench whatif's options).
struct WhatifOptions {
  int64_t chunk = 0;       // chunked_prefill's token budget; 0: 512 (at least the batch)
  int64_t kv_budget = 0;   // kv_budget's cache in tokens; 0: every running sequence at its longest
  int64_t max_batch = 0;   // max_batch's sequences per step; 0: twice the run's
  std::string topology;    // topology's interconnect (a preset or a file); "": not asked
  std::string config_dir;  // where presets are found
};

struct WhatifRecord {
  std::vector<Counterfactual> counterfactuals;  // per point, best tokens/s gain first
};

}  // namespace tpb
