// How --check judges a computed step: the residual stream against the fp64 host reference
// (stack_reference.h) within a tolerance stated by dtype and depth, and the greedy ids against
// the reference's logits, where only a near tie may flip.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/model_shape.h"
#include "layers/reference/stack_reference.h"
#include "layers/reference/tolerance.h"

namespace tpb::ref {

struct ErrorCheck {
  double max_abs_err = 0;  // infinite when the output holds a NaN or an infinity
  double max_abs_ref = 0;
  double tolerance = 0;  // absolute: the relative tolerance times max_abs_ref
  bool passed = false;
};

struct TokenCheck {
  bool match = true;      // every sequence's id is acceptable
  int64_t near_ties = 0;  // sequences whose reference top-2 logits lie within the tolerance
};

// got against want element by element; sizes must agree (else an infinite error).
ErrorCheck compare_outputs(const std::vector<float>& got, const std::vector<double>& want,
                           double rel_tol);
// The same against another device's output (the TP-sharded step against the unsharded one).
ErrorCheck compare_outputs(const std::vector<float>& got, const std::vector<float>& want,
                           double rel_tol);

// Per sequence, how far below the reference's best logit a sampled id's logit may be (the
// logits' tolerance; derivation in ref_check.cc). `rel_err` is expected_relative_error(...,
// true): the typical relative error of the step and its LM head.
std::vector<double> logit_tolerances(const StackResult& ref, double rel_err);

// Each sequence's sampled id against the reference: accepted when its reference logit is within
// tol[s] of the best one (exactly the reference's argmax unless the top two are that close).
TokenCheck check_tokens(const std::vector<int32_t>& got, const StackResult& ref,
                        const std::vector<double>& tol);
// Two devices' ids (sharded, unsharded): equal, or both accepted on a reference near tie.
TokenCheck check_tokens_agree(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                              const StackResult& ref, const std::vector<double>& tol);

}  // namespace tpb::ref
