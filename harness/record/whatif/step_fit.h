// A serving step's duration as a linear cost of its batch's shape, fitted on a measured run's own
// steps, for the counterfactuals that change the batches (chunked prefill, a bigger KV budget).
// The terms are what a mixed step records: a fixed cost per step, decode rows, prefill tokens,
// and the positions attention reads (a decode row reads its context; a prefill chunk of n new
// tokens after c cached reads c + (n + 1) / 2 per token on average, causal).
#pragma once
#include <string>
#include <vector>

#include "layers/step_batch.h"

namespace tpb {

struct StepShape {
  double decode_rows = 0, prefill_tokens = 0, attended = 0;
};
StepShape step_shape(const StepBatch& b);

struct StepFit {
  // seconds per step, per decode row, per prefill token, per attended position; all >= 0
  // (a term whose least-squares coefficient came out negative is dropped and the rest refitted).
  double fixed_s = 0, per_decode_row_s = 0, per_prefill_token_s = 0, per_attended_s = 0;
  double error = 0;  // mean over the fitted steps of |fit - measured| / measured
  int steps = 0;
  double predict(const StepShape& s) const;
  std::string text() const;  // the formula with its coefficients, for a counterfactual's inputs
};

// Least squares on `shapes` against `durations` (same length, durations > 0), with every
// coefficient held non-negative. Throws std::invalid_argument on empty or mismatched input.
StepFit fit_steps(const std::vector<StepShape>& shapes, const std::vector<double>& durations);

}  // namespace tpb
