// Non-negative least squares by elimination of the negative terms: the normal equations of the
// active terms solved by Gaussian elimination on columns scaled to their mean, which keeps a
// 4x4 system of seconds-per-token and seconds-per-position terms well conditioned.
#include "harness/record/whatif/step_fit.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <stdexcept>

namespace tpb {

namespace {

constexpr int kTerms = 4;
using Row = std::array<double, kTerms>;

Row terms(const StepShape& s) {
  return {1.0, s.decode_rows, s.prefill_tokens, s.attended};
}

// Solves the n x n system `a` x = `b` in place (partial pivoting); false when singular.
bool solve(std::vector<std::vector<double>>& a, std::vector<double>& b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    if (std::abs(a[piv][c]) < 1e-12) return false;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = 0; c < n; ++c) b[c] /= a[c][c];
  return true;
}

// Least squares over the active terms (scaled columns); inactive ones stay 0. A term with no
// spread against the others (a singular system) is dropped like a negative one.
Row least_squares(const std::vector<Row>& x, const std::vector<double>& y,
                  std::array<bool, kTerms>& on) {
  for (;;) {
    std::vector<int> idx;
    for (int t = 0; t < kTerms; ++t)
      if (on[t]) idx.push_back(t);
    Row coef{};
    if (idx.empty()) return coef;
    const std::size_t n = idx.size();
    std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
    std::vector<double> b(n, 0.0);
    for (std::size_t k = 0; k < x.size(); ++k)
      for (std::size_t i = 0; i < n; ++i) {
        b[i] += x[k][idx[i]] * y[k];
        for (std::size_t j = 0; j < n; ++j) a[i][j] += x[k][idx[i]] * x[k][idx[j]];
      }
    int drop = -1;
    if (!solve(a, b)) {
      drop = idx.back();  // singular: the last active term adds nothing the others lack
    } else {
      double worst = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (b[i] < worst) worst = b[i], drop = idx[i];
    }
    if (drop < 0) {
      for (std::size_t i = 0; i < n; ++i) coef[idx[i]] = b[i];
      return coef;
    }
    on[drop] = false;
  }
}

}  // namespace

StepShape step_shape(const StepBatch& b) {
  StepShape s;
  for (const SeqSlice& q : b.seqs) {
    const double c = static_cast<double>(q.cached), n = static_cast<double>(q.new_tokens);
    if (q.new_tokens == 1 && q.cached > 0)
      s.decode_rows += 1;
    else
      s.prefill_tokens += n;
    s.attended += n * (c + (n + 1) / 2);
  }
  return s;
}

double StepFit::predict(const StepShape& s) const {
  return fixed_s + per_decode_row_s * s.decode_rows + per_prefill_token_s * s.prefill_tokens +
         per_attended_s * s.attended;
}

std::string StepFit::text() const {
  return fmt::format(
      "step = {:.4g} s + {:.4g} s x decode rows + {:.4g} s x prefill tokens + {:.4g} s x attended "
      "positions (non-negative least squares on the run's {} steps; mean |error| {:.1f}%)",
      fixed_s, per_decode_row_s, per_prefill_token_s, per_attended_s, steps, error * 100);
}

StepFit fit_steps(const std::vector<StepShape>& shapes, const std::vector<double>& durations) {
  if (shapes.empty() || shapes.size() != durations.size())
    throw std::invalid_argument("fit_steps: " + std::to_string(shapes.size()) + " shapes for " +
                                std::to_string(durations.size()) + " durations");
  std::vector<Row> x;
  Row scale{};
  for (const StepShape& s : shapes) {
    x.push_back(terms(s));
    for (int t = 0; t < kTerms; ++t) scale[t] += x.back()[t] / static_cast<double>(shapes.size());
  }
  std::array<bool, kTerms> on{};
  for (int t = 0; t < kTerms; ++t) on[t] = scale[t] > 0;  // a term absent from every step
  for (Row& r : x)
    for (int t = 0; t < kTerms; ++t) r[t] = on[t] ? r[t] / scale[t] : 0.0;
  const Row c = least_squares(x, durations, on);
  StepFit f;
  f.fixed_s = on[0] ? c[0] / scale[0] : 0;
  f.per_decode_row_s = on[1] ? c[1] / scale[1] : 0;
  f.per_prefill_token_s = on[2] ? c[2] / scale[2] : 0;
  f.per_attended_s = on[3] ? c[3] / scale[3] : 0;
  f.steps = static_cast<int>(shapes.size());
  for (std::size_t k = 0; k < shapes.size(); ++k)
    f.error += std::abs(f.predict(shapes[k]) - durations[k]) / durations[k];
  f.error /= static_cast<double>(shapes.size());
  return f;
}

}  // namespace tpb
