// Sweep console output. Columns answer "how fast" (tokens/s, step p50), "how close to the
// hardware" (MBU, MFU) and "how much is lost to imbalance" (skew p95, wait share).
#include "harness/report/sweep_table.h"

#include <fmt/format.h>

#include <cmath>

namespace tpb {

namespace {

std::string duration(double s) {
  if (s < 0) return "?";
  if (s < 120) return fmt::format("{:.0f}s", s);
  return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
}

std::string params_text(const PointParams& par) {
  const bool decode = par.phase == "decode";
  std::string inj;
  for (const auto& e : par.inject) inj += (inj.empty() ? "" : ",") + e;
  return fmt::format("{} b={} {}={} tp={} L={} {} {}{}", par.phase, par.batch,
                     decode ? "ctx" : "prompt", decode ? par.context : par.prompt, par.tp,
                     par.layers, par.dtype, par.topology, inj.empty() ? "" : " inject=" + inj);
}

}  // namespace

double sweep_eta_s(double elapsed_run_s, std::size_t points_run, std::size_t points_left) {
  if (points_run == 0) return -1;
  return elapsed_run_s / static_cast<double>(points_run) * static_cast<double>(points_left);
}

std::string format_progress(const SweepProgress& p) {
  std::string last = "-";
  if (p.last_tokens_per_s >= 0)
    last = p.last_status == "ok" ? fmt::format("{:.1f} tok/s", p.last_tokens_per_s) : p.last_status;
  return fmt::format("[sweep {}/{}] {} | last: {} | elapsed {}, ETA {}{}", p.k, p.n, p.label, last,
                     duration(p.elapsed_s), duration(p.eta_s),
                     p.resumed ? fmt::format(" ({} resumed)", p.resumed) : "");
}

std::string format_sweep_table(const std::vector<PointRecord>& points) {
  std::string out =
      fmt::format("\n{:>3}  {:<48} {:>7} {:>10} {:>10} {:>7} {:>8} {:>10} {:>6}\n", "#", "point",
                  "status", "tok/s", "step_p50", "MBU", "MFU", "skew_p95", "wait%");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const PointRecord& p = points[i];
    std::string row = fmt::format("{:>3}  {:<48} {:>7}", i + 1, params_text(p.params),
                                  point_status_name(p.status));
    if (p.status == PointStatus::ok && p.metrics && p.collectives) {
      const MetricsRecord& m = *p.metrics;
      row += fmt::format(" {:>10.1f} {:>8.2f}ms {:>7.3f} {:>8.5f} {:>8.1f}us {:>6.1f}",
                         m.tokens_per_s, m.step_time_s.p50 * 1e3, m.mbu, m.mfu,
                         p.collectives->skew_s.p95 * 1e6, 100 * p.collectives->wait_fraction);
    } else if (p.memory) {
      row += fmt::format("  need {:.2f} GiB > have {:.2f} GiB{}",
                         p.memory->need_bytes / 1073741824.0, p.memory->have_bytes / 1073741824.0,
                         p.memory_exhaustion.value_or(false) ? "  <- memory exhaustion" : "");
    } else {
      row += "  " + p.reason;
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace tpb
