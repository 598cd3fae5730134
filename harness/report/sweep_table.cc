// Sweep console output. Columns answer "how fast" (tokens/s, step p50), "how close to the
// hardware" (MBU, MFU) and "how much is lost to imbalance" (skew p95, wait share).
#include "harness/report/sweep_table.h"

#include <fmt/format.h>

#include <cmath>

#include "harness/record/json_number.h"

namespace tpb {

namespace {

std::string duration(double s) {
  if (s < 0) return "?";
  if (s < 120) return fmt::format("{:.0f}s", s);
  return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
}

std::string params_text(const nlohmann::ordered_json& par) {
  const bool decode = par.value("phase", "decode") == "decode";
  std::string inj;
  for (const auto& e : par.value("inject", nlohmann::ordered_json::array()))
    inj += (inj.empty() ? "" : ",") + e.get<std::string>();
  return fmt::format("{} b={} {}={} tp={} {} {}{}", par.value("phase", "?"),
                     par.value("batch", 0LL), decode ? "ctx" : "prompt",
                     decode ? par.value("context", 0LL) : par.value("prompt", 0LL),
                     par.value("tp", 0), par.value("dtype", "?"), par.value("topology", "?"),
                     inj.empty() ? "" : " inject=" + inj);
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

std::string format_sweep_table(const std::vector<nlohmann::ordered_json>& points) {
  std::string out =
      fmt::format("\n{:>3}  {:<48} {:>7} {:>10} {:>10} {:>7} {:>8} {:>10} {:>6}\n", "#", "point",
                  "status", "tok/s", "step_p50", "MBU", "MFU", "skew_p95", "wait%");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const std::string status = p.value("status", "?");
    std::string row = fmt::format("{:>3}  {:<48} {:>7}", i + 1, params_text(p["params"]), status);
    if (status == "ok") {
      const auto& m = p["metrics"];
      row += fmt::format(" {:>10.1f} {:>8.2f}ms {:>7.3f} {:>8.5f} {:>8.1f}us {:>6.1f}",
                         json_number(m, "tokens_per_s"), json_number(m["step_time_s"], "p50") * 1e3,
                         json_number(m, "mbu"), json_number(m, "mfu"),
                         json_number(p["collectives"]["skew_s"], "p95") * 1e6,
                         100 * json_number(p["collectives"], "wait_fraction"));
    } else if (p.contains("memory")) {
      row += fmt::format("  need {:.2f} GiB > have {:.2f} GiB{}",
                         json_number(p["memory"], "need_bytes") / 1073741824.0,
                         json_number(p["memory"], "have_bytes") / 1073741824.0,
                         p.value("memory_exhaustion", false) ? "  <- memory exhaustion" : "");
    } else {
      row += "  " + p.value("reason", std::string());
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace tpb
