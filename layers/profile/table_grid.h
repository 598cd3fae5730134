// Interpolation over measured kernel-time tables (issue 57): dense grids of up to 3 axes with
// holes, and 1-D byte curves, each answer carrying whether it was measured, interpolated or
// extrapolated. Pure arithmetic; engine_tables.h reads the files and picks the work measure.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tpb {

// Where a priced point lies against the table that priced it.
enum class TableCoverage : uint8_t { exact, interpolated, extrapolated };
const char* table_coverage_name(TableCoverage c);

struct GridValue {
  double s = 0;
  TableCoverage coverage = TableCoverage::exact;
};

// The work a kernel does at a grid coordinate (GEMM: m*n*k; decode attention: batch x
// context; prefill attention: batch x prompt^2): what a time is scaled by between two points.
using WorkFn = double (*)(std::span<const double> point);

// A dense table of times over 1 to 3 strictly ascending axes; values are row-major (the last
// axis fastest), NaN where the point was not measured.
//
// at(query):
//  - on a grid point: its time, `exact`;
//  - inside the grid: multilinear in time over the cell around the query, linear in each
//    axis's own values (GEMM m is 1..17, 32, 33, 48, ...: a time is about flat in m below the
//    tile size and linear above, so a straight line between adjacent points is what the
//    kernel does), `interpolated`;
//  - a cell corner not measured: the nearest measured grid point (in grid steps) scaled by the
//    work ratio corner / that point, `interpolated`;
//  - above an axis's last value: the answer at the edge scaled by the work ratio query / edge,
//    `extrapolated`;
//  - below an axis's first value: the answer at the edge, unscaled, `extrapolated`: the
//    smallest measured kernel is already at its launch-latency floor (GEMM n = k = 32), and a
//    smaller one is no faster; this is the collectives' rule below their smallest size too.
class DenseGrid {
 public:
  DenseGrid() = default;
  // Checked by the caller (engine_tables.cc names the field): each axis strictly ascending
  // and positive, values.size() the product of the axes' sizes, at least one value measured.
  DenseGrid(std::vector<std::vector<double>> axes, std::vector<double> values);

  GridValue at(std::span<const double> query, WorkFn work) const;
  std::size_t dims() const { return axes_.size(); }
  const std::vector<double>& axis(std::size_t d) const { return axes_[d]; }

 private:
  std::size_t flat(std::span<const std::size_t> idx) const;
  // The measured point nearest `idx` in grid steps (squared distance; the first in row-major
  // order on a tie), as a flat index.
  std::size_t nearest_measured(std::span<const std::size_t> idx) const;
  double corner(std::span<const std::size_t> idx, WorkFn work, bool& substituted) const;

  std::vector<std::vector<double>> axes_;
  std::vector<double> values_;
};

// A time against message bytes (a collective at one rank count), bytes strictly ascending:
// `exact` on a point, linear between two (`interpolated`); above the largest, linear from the
// last two points (the bandwidth-bound slope; their own ratio where that slope is not
// positive, as noisy neighbours can make it); below the smallest, the smallest's time (a
// smaller message is latency-bound too). Both outside cases are `extrapolated`.
GridValue interpolate_curve(const std::vector<double>& bytes, const std::vector<double>& s,
                            double query_bytes);

}  // namespace tpb
