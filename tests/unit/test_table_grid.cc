// The interpolation under the engine tables (layers/profile/table_grid.h), on hand-made grids:
// each answer is pinned to a number worked out in the comment beside it, with its coverage.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "layers/profile/table_grid.h"

namespace tpb {
namespace {

constexpr double kNull = std::numeric_limits<double>::quiet_NaN();

double product(std::span<const double> p) {
  double w = 1;
  for (double x : p) w *= x;
  return w;
}

double square_last(std::span<const double> p) {
  return p[0] * p[1] * p[1];
}

GridValue at1(const DenseGrid& g, double x) {
  const double q[] = {x};
  return g.at(q, product);
}

GridValue at2(const DenseGrid& g, double x, double y, WorkFn work = product) {
  const double q[] = {x, y};
  return g.at(q, work);
}

TEST(TableGrid, OneAxisIsPiecewiseLinearInTheAxisOwnValues) {
  // m = 1, 2, 16, 32: 16 -> 32 is 16 steps wide, so m = 24 is half way: (30 + 50) / 2 = 40.
  const DenseGrid g({{1, 2, 16, 32}}, {10, 10, 30, 50});
  EXPECT_DOUBLE_EQ(at1(g, 24).s, 40);
  EXPECT_EQ(at1(g, 24).coverage, TableCoverage::interpolated);
  // 2 -> 16: m = 9 is half way (10 + 30) / 2 = 20, not the log-spaced answer.
  EXPECT_DOUBLE_EQ(at1(g, 9).s, 20);
  EXPECT_DOUBLE_EQ(at1(g, 16).s, 30);
  EXPECT_EQ(at1(g, 16).coverage, TableCoverage::exact);
  EXPECT_EQ(at1(g, 1).coverage, TableCoverage::exact);
  EXPECT_EQ(at1(g, 32).coverage, TableCoverage::exact);
}

TEST(TableGrid, PastTheLastValueScalesTheEdgeByTheWork) {
  const DenseGrid g({{1, 2, 16, 32}}, {10, 10, 30, 50});
  // 96 / 32 = 3 times the work of the edge: 3 x 50.
  EXPECT_DOUBLE_EQ(at1(g, 96).s, 150);
  EXPECT_EQ(at1(g, 96).coverage, TableCoverage::extrapolated);
  // Below the first value: the first value's time, not scaled down (latency-bound).
  EXPECT_DOUBLE_EQ(at1(g, 0.5).s, 10);
  EXPECT_EQ(at1(g, 0.5).coverage, TableCoverage::extrapolated);
}

TEST(TableGrid, BilinearInsideAndScaledOutsideOneAxisOnly) {
  // s[b][c] over b = 1, 4 and c = 100, 200.
  const DenseGrid g({{1, 4}, {100, 200}}, {10, 20, 30, 60});
  // b = 2 is 1/3 of the way, c = 150 half: at b=1 15, at b=4 45, then 15 + 30/3 = 25.
  EXPECT_DOUBLE_EQ(at2(g, 2, 150).s, 25);
  EXPECT_EQ(at2(g, 2, 150).coverage, TableCoverage::interpolated);
  // c = 400 past the edge, b inside: the edge answer at b = 2 (20 + 40/3) times 400 / 200.
  EXPECT_DOUBLE_EQ(at2(g, 2, 400).s, (20 + 40.0 / 3) * 2);
  EXPECT_EQ(at2(g, 2, 400).coverage, TableCoverage::extrapolated);
  // A prefill work measure b x c^2: c = 400 is 4 times the edge's work at the same b.
  EXPECT_DOUBLE_EQ(at2(g, 4, 400, square_last).s, 60 * 4);
  // Below b, above c: no scaling down in b, 2x up in c: s(1, 200) x 2.
  EXPECT_DOUBLE_EQ(at2(g, 0.5, 400).s, 40);
}

TEST(TableGrid, TrilinearAgainstAHandComputedValue) {
  // s = base[m] + 4 j + 8 l + 16 j l (us) over m = 1, 2, 4 (base 10, 10, 20), n = 32, 64
  // (j = 0, 1), k = 32, 64 (l = 0, 1); row-major, k fastest.
  const DenseGrid g({{1, 2, 4}, {32, 64}, {32, 64}},
                    {10, 18, 14, 38, 10, 18, 14, 38, 20, 28, 24, 48});
  // m = 3 half way from 2 to 4 (base 15), n = 48 half way (j = 0.5), k = 40 a quarter
  // (l = 0.25): 15 + 4 * 0.5 + 8 * 0.25 + 16 * 0.5 * 0.25 = 21.
  const double q[] = {3, 48, 40};
  EXPECT_DOUBLE_EQ(g.at(q, product).s, 21);
  EXPECT_EQ(g.at(q, product).coverage, TableCoverage::interpolated);
}

TEST(TableGrid, AHoleTakesTheNearestMeasuredPointScaledByWork) {
  // m = 1, 2, 4 with m = 4 not measured: its nearest measured point is m = 2 (one step), so
  // it reads 12 x 4 / 2 = 24; m = 3 is half way from 12 to 24.
  const DenseGrid g({{1, 2, 4}}, {10, 12, kNull});
  EXPECT_DOUBLE_EQ(at1(g, 4).s, 24);
  EXPECT_EQ(at1(g, 4).coverage, TableCoverage::interpolated);
  EXPECT_DOUBLE_EQ(at1(g, 3).s, 18);
  EXPECT_EQ(at1(g, 3).coverage, TableCoverage::interpolated);
  // A query on a measured point next to the hole never reads the hole.
  EXPECT_DOUBLE_EQ(at1(g, 2).s, 12);
  EXPECT_EQ(at1(g, 2).coverage, TableCoverage::exact);
}

TEST(TableGrid, AHoleEquallyNearTwoPointsTakesTheFirstInRowMajorOrder) {
  // s[b][c], b = 1, 2, 4, c = 10, 20: the hole at (4, 20) is one step from (4, 10) and
  // (2, 20); the first in row-major order, (2, 20) = 8, scaled by 4 x 20 / (2 x 20) = 2.
  const DenseGrid g({{1, 2, 4}, {10, 20}}, {1, 2, 4, 8, 9, kNull});
  EXPECT_DOUBLE_EQ(at2(g, 4, 20).s, 16);
  // Half way in c at b = 4: (9 + 16) / 2.
  EXPECT_DOUBLE_EQ(at2(g, 4, 15).s, 12.5);
}

// Every hole of a 6 x 5 x 4 grid with every third point (row-major) unmeasured, against a scan of
// the whole grid for the nearest measured point (squared grid steps, the first in row-major
// order on a tie): the bounded search in DenseGrid must find the same point.
TEST(TableGrid, HolesFindTheSamePointAsAWholeGridScan) {
  const std::vector<double> m{1, 2, 4, 8, 16, 32}, n{32, 64, 128, 256, 512}, k{32, 64, 96, 128};
  std::vector<double> v;
  for (std::size_t f = 0; f < m.size() * n.size() * k.size(); ++f)
    v.push_back((f * 7919) % 3 == 0 ? kNull : 1.0 + static_cast<double>(f));
  const DenseGrid g({m, n, k}, v);
  int holes = 0;
  for (std::size_t f = 0; f < v.size(); ++f) {
    if (!std::isnan(v[f])) continue;
    ++holes;
    const std::size_t i = f / 20, j = f / 4 % 5, l = f % 4;
    std::size_t best = 0;
    double best_d2 = 1e300;
    for (std::size_t e = 0; e < v.size(); ++e) {
      if (std::isnan(v[e])) continue;
      const double di = double(e / 20) - double(i), dj = double(e / 4 % 5) - double(j),
                   dl = double(e % 4) - double(l);
      if (di * di + dj * dj + dl * dl < best_d2) best = e, best_d2 = di * di + dj * dj + dl * dl;
    }
    const double want =
        v[best] * (m[i] * n[j] * k[l]) / (m[best / 20] * n[best / 4 % 5] * k[best % 4]);
    const double q[] = {m[i], n[j], k[l]};
    EXPECT_DOUBLE_EQ(g.at(q, product).s, want) << "hole at " << i << "," << j << "," << l;
  }
  EXPECT_EQ(holes, 40);
  // One measured point, the far corner from the query: found however far.
  std::vector<double> one(25, kNull);
  one[0] = 10;
  const DenseGrid far({{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}}, one);
  EXPECT_DOUBLE_EQ(at2(far, 5, 5).s, 250);
}

TEST(TableGrid, CurveBetweenAboveAndBelowItsSizes) {
  const std::vector<double> bytes{1024, 4096, 16384}, s{10, 12, 20};
  EXPECT_DOUBLE_EQ(interpolate_curve(bytes, s, 4096).s, 12);
  EXPECT_EQ(interpolate_curve(bytes, s, 4096).coverage, TableCoverage::exact);
  // 2048 is 1/3 of the way from 1024 to 4096: 10 + 2/3.
  EXPECT_DOUBLE_EQ(interpolate_curve(bytes, s, 2048).s, 10 + 2.0 / 3);
  EXPECT_EQ(interpolate_curve(bytes, s, 2048).coverage, TableCoverage::interpolated);
  // Past 16384 on the last two points' slope, 8 per 12288 bytes: 20 + 8 x 16384 / 12288.
  EXPECT_DOUBLE_EQ(interpolate_curve(bytes, s, 32768).s, 20 + 8.0 * 16384 / 12288);
  EXPECT_EQ(interpolate_curve(bytes, s, 32768).coverage, TableCoverage::extrapolated);
  // Below 1024: 1024's time.
  EXPECT_DOUBLE_EQ(interpolate_curve(bytes, s, 8).s, 10);
  EXPECT_EQ(interpolate_curve(bytes, s, 8).coverage, TableCoverage::extrapolated);
}

TEST(TableGrid, CurveWithAFallingTailScalesByBytes) {
  // The last two points fall (noise): a line through them would go to zero, so the last
  // point is scaled by bytes: 9 x 2.
  const std::vector<double> bytes{1024, 2048}, s{10, 9};
  EXPECT_DOUBLE_EQ(interpolate_curve(bytes, s, 4096).s, 18);
  const std::vector<double> one{1024}, t{10};
  EXPECT_DOUBLE_EQ(interpolate_curve(one, t, 3072).s, 30);
}

TEST(TableGrid, CoverageNames) {
  EXPECT_STREQ(table_coverage_name(TableCoverage::exact), "exact");
  EXPECT_STREQ(table_coverage_name(TableCoverage::interpolated), "interpolated");
  EXPECT_STREQ(table_coverage_name(TableCoverage::extrapolated), "extrapolated");
}

}  // namespace
}  // namespace tpb
