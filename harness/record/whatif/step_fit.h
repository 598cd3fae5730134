// A serving step's duration as a cost of its batch's shape, fitted on a measured run's own steps,
// for the counterfactuals that change the batches (chunked prefill, a bigger KV budget). The
// shape of the law is the roofline's: a step takes the longer of its memory time (every weight
// read once whatever the batch, plus each decode row's KV context and its LM head and sampling)
// and its compute time (the GEMMs over every token of the step, plus the prefill tokens'
// attention: a chunk of n new tokens after c cached reads c + (n + 1) / 2 positions per token,
// causal). Two linear laws, one fitted on the decode-only steps and one on the steps with
// prefill rows; a step with prefill rows costs the larger of the two, a decode-only step its
// memory law (the compute law's fixed part, fitted on prefills, can exceed a decode step:
// on the CPU backend 48 ms against a 26 ms decode step).
#pragma once
#include <string>
#include <vector>

#include "layers/step_batch.h"

namespace tpb {

struct StepShape {
  double decode_rows = 0, tokens = 0, decode_context = 0, prefill_attended = 0;
  double prefill_prefix = 0;  // the part of prefill_attended over cached positions (chunks)
};
StepShape step_shape(const StepBatch& b);
bool has_prefill(const StepShape& s);  // some row is a prompt's (not a decode)

struct StepFit {
  // memory: mem_fixed + per_decode_row x rows + per_context x decode context;
  // compute: compute_fixed + per_token x tokens + per_prefill_attended x prefill positions.
  // Every coefficient >= 0 (a term whose least-squares coefficient came out negative is
  // dropped and the rest refitted).
  double mem_fixed_s = 0, per_decode_row_s = 0, per_context_s = 0;
  double compute_fixed_s = 0, per_token_s = 0, per_prefill_attended_s = 0;
  double error = 0;  // mean over the fitted steps of |fit - measured| / measured
  int steps = 0;
  double memory_s(const StepShape& s) const;
  double compute_s(const StepShape& s) const;
  // A decode-only step: the memory law; a step with prefill rows: the larger of the two.
  double predict(const StepShape& s) const;
  std::string text() const;  // the formula with its coefficients, for a counterfactual's inputs
};

// Least squares of the relative error (each step over its own time, so that the short steps
// weigh as much as the long ones) with every coefficient non-negative: the memory law on the
// decode-only steps, the compute law on the steps with prefill rows that it, not the memory
// law, bounds (refitted once without those the memory law bounds). Without steps of one kind,
// its law is 0 and the other stands alone. The prefill attention term is fitted only when some
// prefill chunk had a cached prefix: with every prompt from position 0, its n^2/2 is too close
// to the curvature of the GEMMs' efficiency in the token count to stand for attention (a model
// run so fitted put 5e-9 s per position where its chunked twin measured 0), and its cost stays
// in the per-token term. Throws std::invalid_argument on empty or mismatched input.
StepFit fit_steps(const std::vector<StepShape>& shapes, const std::vector<double>& durations);

}  // namespace tpb
