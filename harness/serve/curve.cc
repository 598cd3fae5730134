// The throughput-latency curve of a serve sweep: free region, knee and memory wall.
#include "harness/serve/curve.h"

#include <algorithm>
#include <cmath>

namespace tpb {
namespace {

// The loads whose p95 ITL stays within (1 + threshold) of the lightest load's, from the lightest
// up to the first one outside (or not ok). The relative epsilon keeps a point exactly at the
// boundary (11 ms against 10 ms and 10%) inside despite rounding.
// A load without a p95 ITL (no gap measured: every output one token long) ends the region: it
// says nothing about latency, and NaN would pass any comparison.
std::optional<double> free_upto(const std::vector<CurveInput>& pts, double threshold) {
  if (pts.empty() || pts.front().status != "ok" || !std::isfinite(pts.front().itl_p95_s))
    return std::nullopt;
  const double limit = pts.front().itl_p95_s * (1 + threshold) * (1 + 1e-12);
  std::optional<double> upto;
  for (const auto& p : pts) {
    if (p.status != "ok" || !(p.itl_p95_s <= limit)) break;
    upto = p.x;
  }
  return upto;
}

// Kneedle (Satopaa et al. 2011), the offline variant for a handful of measured points: no
// smoothing spline (the points are few and already averages) and no sensitivity threshold S
// (we want the one knee, the global maximum of the difference curve, not every local one).
// x and y are normalised by their min and max, so a throughput that falls past saturation
// still normalises into [0, 1]. The curve is concave and rising: difference = y_n - x_n.
std::optional<double> kneedle(const std::vector<CurveInput>& pts) {
  std::vector<const CurveInput*> ok;
  for (const auto& p : pts)
    if (p.status == "ok" && std::isfinite(p.total_tokens_per_s)) ok.push_back(&p);
  if (ok.size() < 3) return std::nullopt;
  const auto [xlo, xhi] = std::minmax_element(
      ok.begin(), ok.end(), [](const CurveInput* a, const CurveInput* b) { return a->x < b->x; });
  const auto [ylo, yhi] =
      std::minmax_element(ok.begin(), ok.end(), [](const CurveInput* a, const CurveInput* b) {
        return a->total_tokens_per_s < b->total_tokens_per_s;
      });
  const double x0 = (*xlo)->x, xs = (*xhi)->x - x0;
  const double y0 = (*ylo)->total_tokens_per_s, ys = (*yhi)->total_tokens_per_s - y0;
  if (xs <= 0 || ys <= 0) return std::nullopt;
  double best = 0;
  std::optional<double> knee;
  for (const CurveInput* p : ok) {
    const double d = (p->total_tokens_per_s - y0) / ys - (p->x - x0) / xs;
    if (d > best) {  // strict: the first (lightest) load wins a tie
      best = d;
      knee = p->x;
    }
  }
  return knee;
}

// SLO capacity over the loads in increasing order: the last to meet the target before the
// first that misses it (or is not ok). Absent when no load carries an attainment (no --slo).
std::optional<SloCapacity> slo_capacity(const std::vector<CurveInput>& pts, double target) {
  if (std::none_of(pts.begin(), pts.end(),
                   [](const CurveInput& p) { return p.slo_attainment.has_value(); }))
    return std::nullopt;
  SloCapacity c;
  c.target = target;
  for (const CurveInput& p : pts) {
    const double a = p.slo_attainment.value_or(0);
    if (p.status != "ok" || !(a >= target)) {
      c.next_x = p.x;
      c.next_attainment = a;
      break;
    }
    c.x = p.x;
    c.attainment = a;
    c.goodput_rps = p.goodput_rps;
    c.goodput_per_gpu = p.gpus > 0 ? p.goodput_rps / static_cast<double>(p.gpus) : 0;
    c.cost = p.cost;
  }
  return c;
}

}  // namespace

Curve make_curve(const std::string& x_name, std::vector<CurveInput> points, double free_threshold) {
  std::stable_sort(points.begin(), points.end(),
                   [](const CurveInput& a, const CurveInput& b) { return a.x < b.x; });
  Curve c;
  c.x = x_name;
  c.free_threshold = free_threshold;
  c.free_upto = free_upto(points, free_threshold);
  c.knee_x = kneedle(points);
  c.slo = slo_capacity(points, 0.9);
  for (const auto& p : points) {
    if (p.status == "oom" || p.kv_full_with_queue) {
      c.wall_x = p.x;
      const std::string kv = p.kv_reason.empty()
                                 ? "the KV cache was full with requests waiting or preempted"
                                 : p.kv_reason;
      c.wall_reason = p.status == "oom" ? "the point did not fit in memory (status oom)" : kv;
      if (p.status == "oom" && !p.kv_reason.empty()) c.wall_reason += ": " + p.kv_reason;
      break;
    }
  }
  c.points = std::move(points);
  return c;
}

}  // namespace tpb
