// --check's comparisons: outputs element by element, and greedy ids against the reference's
// logits (the tolerance rule itself is tolerance.h's).
#include "layers/reference/ref_check.h"

#include <algorithm>
#include <cmath>

#include "layers/reference/max_error.h"

namespace tpb::ref {

namespace {

template <class W>
ErrorCheck compare(const std::vector<float>& got, const std::vector<W>& want, double rel_tol) {
  ErrorCheck c;
  for (const W w : want) c.max_abs_ref = std::max(c.max_abs_ref, std::fabs(static_cast<double>(w)));
  c.tolerance = rel_tol * c.max_abs_ref;
  if (got.size() != want.size()) {
    c.max_abs_err = INFINITY;
    return c;
  }
  for (std::size_t i = 0; i < want.size(); ++i)
    c.max_abs_err = worse_error(c.max_abs_err, got[i], static_cast<double>(want[i]));
  c.passed = c.max_abs_err <= c.tolerance;
  return c;
}

// The reference's logit of sequence s's id, or -inf for an id outside the vocabulary.
double logit_of(const StackResult& ref, std::size_t s, int32_t id) {
  if (id < 0 || id >= ref.vocab) return -INFINITY;
  return ref.logits[s * static_cast<std::size_t>(ref.vocab) + static_cast<std::size_t>(id)];
}

// The best and second-best reference logits of sequence s.
std::pair<double, double> top2(const StackResult& ref, std::size_t s) {
  double a = -INFINITY, b = -INFINITY;
  const std::size_t V = static_cast<std::size_t>(ref.vocab);
  for (std::size_t v = 0; v < V; ++v) {
    const double l = ref.logits[s * V + v];
    if (l > a) {
      b = a;
      a = l;
    } else if (l > b) {
      b = l;
    }
  }
  return {a, b};
}

}  // namespace

ErrorCheck compare_outputs(const std::vector<float>& got, const std::vector<double>& want,
                           double rel_tol) {
  return compare(got, want, rel_tol);
}

ErrorCheck compare_outputs(const std::vector<float>& got, const std::vector<float>& want,
                           double rel_tol) {
  return compare(got, want, rel_tol);
}

// A row that reaches the final RMSNorm with relative error e leaves it with relative error e
// (the norm divides the error and the row by the same rms). The LM head is linear, and its rows
// are independent of that error, so each logit moves by about e times the logits' spread:
//   sigma(delta logit) ~ e rms_v(logit_s(v)),   e = rel_err (tolerance.h's e_step, B + 1 blocks).
// A flip of two ids needs their errors to differ by the margin; that difference is about
// sqrt(2) sigma, and e is itself about twice the error measured on a GPU, so
//   tol[s] = kLogitSigmas e rms_v(logit_s(v)),   kLogitSigmas = 4
// keeps rounding from failing the check, while a wrong id fails it: the best of V logits sits
// about 4 rms above a random one (bf16 on Llama-3.1-8B: e = 0.031, tol = 0.13 rms).
std::vector<double> logit_tolerances(const StackResult& ref, double rel_err) {
  constexpr double kLogitSigmas = 4.0;
  const std::size_t V = static_cast<std::size_t>(ref.vocab);
  const std::size_t S = V ? ref.logits.size() / V : 0;
  std::vector<double> tol(S);
  for (std::size_t s = 0; s < S; ++s) {
    double ss = 0;
    for (std::size_t v = 0; v < V; ++v) ss += ref.logits[s * V + v] * ref.logits[s * V + v];
    tol[s] = kLogitSigmas * rel_err * std::sqrt(ss / static_cast<double>(V));
  }
  return tol;
}

TokenCheck check_tokens(const std::vector<int32_t>& got, const StackResult& ref,
                        const std::vector<double>& tol) {
  TokenCheck c;
  if (got.size() != tol.size()) return TokenCheck{false, 0};
  for (std::size_t s = 0; s < got.size(); ++s) {
    const auto [best, second] = top2(ref, s);
    c.near_ties += best - second <= tol[s];
    c.match = c.match && logit_of(ref, s, got[s]) >= best - tol[s];
  }
  return c;
}

TokenCheck check_tokens_agree(const std::vector<int32_t>& a, const std::vector<int32_t>& b,
                              const StackResult& ref, const std::vector<double>& tol) {
  TokenCheck c;
  if (a.size() != tol.size() || b.size() != tol.size()) return TokenCheck{false, 0};
  for (std::size_t s = 0; s < a.size(); ++s) {
    const auto [best, second] = top2(ref, s);
    const bool tie = best - second <= tol[s];
    c.near_ties += tie;
    const bool both_ok =
        logit_of(ref, s, a[s]) >= best - tol[s] && logit_of(ref, s, b[s]) >= best - tol[s];
    c.match = c.match && (a[s] == b[s] || (tie && both_ok));
  }
  return c;
}

}  // namespace tpb::ref
