// Multilinear interpolation over measured time grids with holes, and byte curves; the rules
// (edges, holes, work ratios) are in table_grid.h.
#include "layers/profile/table_grid.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "base/enum_names.h"
#include "base/errors.h"

namespace tpb {

namespace {

constexpr std::size_t kMaxDims = 3;
constexpr std::array<const char*, 3> kCoverageNames{"exact", "interpolated", "extrapolated"};

// A query's place on one axis: the cell [lo, hi] and the fraction t of the way from lo to hi
// (lo == hi, t = 0 on a grid point or past an edge); `edge` is the query held inside the axis;
// side is -1 below the first value, +1 above the last, 0 inside.
struct AxisPos {
  std::size_t lo = 0, hi = 0;
  double t = 0, edge = 0;
  int side = 0;
};

AxisPos locate(const std::vector<double>& a, double q) {
  AxisPos p;
  if (q <= a.front()) {
    p.side = q < a.front() ? -1 : 0;
    p.edge = a.front();
    return p;
  }
  if (q >= a.back()) {
    p.lo = p.hi = a.size() - 1;
    p.side = q > a.back() ? 1 : 0;
    p.edge = a.back();
    return p;
  }
  p.hi = static_cast<std::size_t>(std::upper_bound(a.begin(), a.end(), q) - a.begin());
  p.lo = p.hi - 1;
  p.edge = q;
  if (a[p.lo] == q)
    p.hi = p.lo;
  else
    p.t = (q - a[p.lo]) / (a[p.hi] - a[p.lo]);
  return p;
}

}  // namespace

const char* table_coverage_name(TableCoverage c) {
  return enum_name(kCoverageNames, c);
}

DenseGrid::DenseGrid(std::vector<std::vector<double>> axes, std::vector<double> values)
    : axes_(std::move(axes)), values_(std::move(values)) {
  std::size_t n = 1;
  for (const auto& a : axes_) n *= a.size();
  TPB_ASSERT(!axes_.empty() && axes_.size() <= kMaxDims && n == values_.size(),
             "a grid of 1 to 3 axes with one value per point");
}

std::size_t DenseGrid::flat(std::span<const std::size_t> idx) const {
  std::size_t f = 0;
  for (std::size_t d = 0; d < axes_.size(); ++d) f = f * axes_[d].size() + idx[d];
  return f;
}

std::size_t DenseGrid::nearest_measured(std::span<const std::size_t> idx) const {
  const std::size_t dims = axes_.size();
  std::size_t widest = 0;
  for (const auto& a : axes_) widest = std::max(widest, a.size());
  std::size_t best = values_.size();
  double best_d2 = std::numeric_limits<double>::infinity();
  // Boxes of growing half-width r around idx, each scanned whole in row-major order with a
  // strict `<`: a point at squared distance d2 lies within r = ceil(sqrt(d2)), so once
  // best_d2 <= r^2 the box holds every point as near as the best, and the scan order settles
  // a tie as a scan of the whole grid would. A hole costs a few dozen reads, not the grid's
  // 36k (GEMM bf16: m, n = k = 65536 is not measured at any m).
  for (std::size_t r = 1; r <= widest; ++r) {
    std::array<std::size_t, kMaxDims> lo{}, hi{}, at{};
    for (std::size_t d = 0; d < dims; ++d) {
      lo[d] = idx[d] > r ? idx[d] - r : 0;
      hi[d] = std::min(axes_[d].size() - 1, idx[d] + r);
      at[d] = lo[d];
    }
    for (bool more = true; more;) {
      const std::size_t f = flat(std::span<const std::size_t>(at.data(), dims));
      if (!std::isnan(values_[f])) {
        double d2 = 0;
        for (std::size_t d = 0; d < dims; ++d) {
          const double step = static_cast<double>(at[d]) - static_cast<double>(idx[d]);
          d2 += step * step;
        }
        if (d2 < best_d2) best = f, best_d2 = d2;
      }
      // The next point of the box, the last axis fastest.
      more = false;
      for (std::size_t d = dims; d-- > 0;) {
        if (at[d] < hi[d]) {
          ++at[d];
          more = true;
          break;
        }
        at[d] = lo[d];
      }
    }
    if (best_d2 <= static_cast<double>(r * r)) break;
  }
  TPB_ASSERT(best < values_.size(), "a grid holds at least one measured value");
  return best;
}

double DenseGrid::corner(std::span<const std::size_t> idx, WorkFn work, bool& substituted) const {
  const double v = values_[flat(idx)];
  if (!std::isnan(v)) return v;
  substituted = true;
  std::size_t rest = nearest_measured(idx);
  const double measured = values_[rest];
  std::array<double, kMaxDims> at_corner{}, at_measured{};
  for (std::size_t d = axes_.size(); d-- > 0;) {
    at_corner[d] = axes_[d][idx[d]];
    at_measured[d] = axes_[d][rest % axes_[d].size()];
    rest /= axes_[d].size();
  }
  const std::span<const double> c(at_corner.data(), axes_.size());
  const std::span<const double> m(at_measured.data(), axes_.size());
  return measured * work(c) / work(m);
}

GridValue DenseGrid::at(std::span<const double> query, WorkFn work) const {
  TPB_ASSERT(query.size() == axes_.size(), "a query has one coordinate per grid axis");
  const std::size_t dims = axes_.size();
  std::array<AxisPos, kMaxDims> pos{};
  // inside: the query held inside every axis; floored: held up to the first value only, so
  // that the work ratio floored / inside scales past the last value and not below the first.
  std::array<double, kMaxDims> inside{}, floored{};
  bool outside = false, between = false, substituted = false;
  for (std::size_t d = 0; d < dims; ++d) {
    pos[d] = locate(axes_[d], query[d]);
    inside[d] = pos[d].edge;
    floored[d] = pos[d].side < 0 ? pos[d].edge : query[d];
    outside = outside || pos[d].side != 0;
    between = between || pos[d].t > 0;
  }
  double s = 0;
  for (unsigned c = 0; c < (1u << dims); ++c) {
    double w = 1;
    std::array<std::size_t, kMaxDims> idx{};
    for (std::size_t d = 0; d < dims; ++d) {
      const bool up = ((c >> d) & 1u) != 0;
      w *= up ? pos[d].t : 1 - pos[d].t;
      idx[d] = up ? pos[d].hi : pos[d].lo;
    }
    // A corner of weight 0 (the query on its grid line) is not read, so a hole there costs
    // nothing.
    if (w == 0) continue;
    s += w * corner(std::span<const std::size_t>(idx.data(), dims), work, substituted);
  }
  if (outside)
    s *= work(std::span<const double>(floored.data(), dims)) /
         work(std::span<const double>(inside.data(), dims));
  GridValue r{s, TableCoverage::exact};
  if (outside)
    r.coverage = TableCoverage::extrapolated;
  else if (between || substituted)
    r.coverage = TableCoverage::interpolated;
  return r;
}

GridValue interpolate_curve(const std::vector<double>& bytes, const std::vector<double>& s,
                            double query_bytes) {
  TPB_ASSERT(!bytes.empty() && bytes.size() == s.size(), "a curve has one time per size");
  if (query_bytes < bytes.front()) return {s.front(), TableCoverage::extrapolated};
  const std::size_t last = bytes.size() - 1;
  if (query_bytes > bytes[last]) {
    const double ratio = s[last] * query_bytes / bytes[last];
    if (last == 0) return {ratio, TableCoverage::extrapolated};
    const double slope = (s[last] - s[last - 1]) / (bytes[last] - bytes[last - 1]);
    if (slope <= 0) return {ratio, TableCoverage::extrapolated};
    return {s[last] + slope * (query_bytes - bytes[last]), TableCoverage::extrapolated};
  }
  const auto hi = static_cast<std::size_t>(
      std::lower_bound(bytes.begin(), bytes.end(), query_bytes) - bytes.begin());
  if (bytes[hi] == query_bytes) return {s[hi], TableCoverage::exact};
  const double t = (query_bytes - bytes[hi - 1]) / (bytes[hi] - bytes[hi - 1]);
  return {s[hi - 1] + t * (s[hi] - s[hi - 1]), TableCoverage::interpolated};
}

}  // namespace tpb
