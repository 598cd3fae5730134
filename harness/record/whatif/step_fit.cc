// Non-negative least squares by elimination of the negative terms: the normal equations of the
// active terms solved by Gaussian elimination on columns scaled to their mean, which keeps a
// system of seconds-per-token and seconds-per-position terms well conditioned.
#include "harness/record/whatif/step_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace tpb {

namespace {

constexpr int kTerms = 3;
using Row = std::array<double, kTerms>;

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

// Least squares over the active terms of rows already weighted; inactive ones stay 0. A term
// with no spread against the others (a singular system) is dropped like a negative one.
Row nnls(const std::vector<Row>& x, const std::vector<double>& y, std::array<bool, kTerms> on) {
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

// The relative least squares of `d` on the rows `x` (those with `use`), as coefficients.
Row fit_law(const std::vector<Row>& x, const std::vector<double>& d, const std::vector<bool>& use,
            std::array<bool, kTerms> on) {
  Row scale{};
  double n = 0;
  for (std::size_t k = 0; k < x.size(); ++k)
    if (use[k]) {
      n += 1;
      for (int t = 0; t < kTerms; ++t) scale[t] += x[k][t] / d[k];
    }
  if (n == 0) return {};
  for (int t = 0; t < kTerms; ++t) on[t] = on[t] && scale[t] > 0;  // absent from every step
  std::vector<Row> xs;
  std::vector<double> ones;
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!use[k]) continue;
    Row r{};
    for (int t = 0; t < kTerms; ++t) r[t] = on[t] ? x[k][t] / d[k] / (scale[t] / n) : 0.0;
    xs.push_back(r);
    ones.push_back(1.0);
  }
  Row c = nnls(xs, ones, on);
  for (int t = 0; t < kTerms; ++t) c[t] = on[t] ? c[t] / (scale[t] / n) : 0.0;
  return c;
}

}  // namespace

bool has_prefill(const StepShape& s) {
  return s.tokens > s.decode_rows;
}

StepShape step_shape(const StepBatch& b) {
  StepShape s;
  for (const SeqSlice& q : b.seqs) {
    const double c = static_cast<double>(q.cached), n = static_cast<double>(q.new_tokens);
    s.tokens += n;
    if (q.new_tokens == 1 && q.cached > 0) {
      s.decode_rows += 1;
      s.decode_context += c + 1;
    } else {
      s.prefill_attended += n * (c + (n + 1) / 2);
      s.prefill_prefix += n * c;
    }
  }
  return s;
}

double StepFit::memory_s(const StepShape& s) const {
  return mem_fixed_s + per_decode_row_s * s.decode_rows + per_context_s * s.decode_context;
}

double StepFit::compute_s(const StepShape& s) const {
  return compute_fixed_s + per_token_s * s.tokens + per_prefill_attended_s * s.prefill_attended;
}

double StepFit::predict(const StepShape& s) const {
  // The compute law was fitted on steps with prefill rows only: below their token counts its
  // fixed part (a prefill's own overheads) can exceed a decode step, which it never saw.
  return has_prefill(s) ? std::max(memory_s(s), compute_s(s)) : memory_s(s);
}

std::string StepFit::text() const {
  return fmt::format(
      "step = max({:.4g} s + {:.4g} s x decode rows + {:.4g} s x decode context, {:.4g} s + "
      "{:.4g} s x tokens + {:.4g} s x prefill attended positions) (the memory law on the "
      "decode-only steps, the compute law on the prefill steps; non-negative least squares of "
      "the relative error on the run's {} steps; mean |error| {:.1f}%)",
      mem_fixed_s, per_decode_row_s, per_context_s, compute_fixed_s, per_token_s,
      per_prefill_attended_s, steps, error * 100);
}

StepFit fit_steps(const std::vector<StepShape>& shapes, const std::vector<double>& d) {
  if (shapes.empty() || shapes.size() != d.size())
    throw std::invalid_argument("fit_steps: " + std::to_string(shapes.size()) + " shapes for " +
                                std::to_string(d.size()) + " durations");
  std::vector<Row> mem, comp;
  std::vector<bool> decode_only, prefill;
  bool chunked = false;
  for (const StepShape& s : shapes) {
    mem.push_back({1.0, s.decode_rows, s.decode_context});
    comp.push_back({1.0, s.tokens, s.prefill_attended});
    decode_only.push_back(!has_prefill(s));
    prefill.push_back(has_prefill(s));
    chunked = chunked || s.prefill_prefix > 0;
  }
  StepFit f;
  const Row m = fit_law(mem, d, decode_only, {true, true, true});
  std::tie(f.mem_fixed_s, f.per_decode_row_s, f.per_context_s) = std::tuple(m[0], m[1], m[2]);
  auto fit_compute = [&] {
    const Row c = fit_law(comp, d, prefill, {true, true, chunked});
    std::tie(f.compute_fixed_s, f.per_token_s, f.per_prefill_attended_s) =
        std::tuple(c[0], c[1], c[2]);
  };
  fit_compute();
  // A prefill step the memory law bounds (a short prompt beside many decodes) says nothing of
  // the compute law: refit without those while enough remain, until the set holds still.
  for (int round = 0; round < 5; ++round) {
    std::vector<bool> bound(shapes.size(), false);
    int left = 0;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      bound[k] = has_prefill(shapes[k]) && f.compute_s(shapes[k]) >= f.memory_s(shapes[k]);
      left += bound[k] ? 1 : 0;
    }
    if (left < 3 || bound == prefill) break;
    prefill = bound;
    fit_compute();
  }
  f.steps = static_cast<int>(shapes.size());
  for (std::size_t k = 0; k < shapes.size(); ++k)
    f.error += std::abs(f.predict(shapes[k]) - d[k]) / d[k] / static_cast<double>(shapes.size());
  return f;
}

}  // namespace tpb
