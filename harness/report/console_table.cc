// Console table. Columns answer the article's questions in order: how busy (occupancy),
// how useful (compute share), how close to the hardware (MBU, MFU vs its ceiling), and who
// waits for whom (wait, arrived last).
#include "harness/report/console_table.h"

#include <fmt/format.h>

#include "harness/record/json_number.h"

namespace tpb {

std::string format_point_table(const nlohmann::ordered_json& p) {
  const auto& par = p["params"];
  std::string out = fmt::format(
      "\n== {} {} batch={} {}={} tp={} {} {} layers={} ==\n", par["model"].get<std::string>(),
      par["phase"].get<std::string>(), par["batch"].get<long long>(),
      par["phase"] == "decode" ? "context" : "prompt",
      par["phase"] == "decode" ? par["context"].get<long long>() : par["prompt"].get<long long>(),
      par["tp"].get<int>(), par["dtype"].get<std::string>(), par["backend"].get<std::string>(),
      par["layers"].get<long long>());
  if (p["status"] != "ok") {
    out += fmt::format("status: {} ({})\n", p["status"].get<std::string>(),
                       p["reason"].get<std::string>());
    return out;
  }
  const auto& m = p["metrics"];
  const int straggler = p["straggler"]["rank"].get<int>();
  out += fmt::format("{:>5} {:>3} {:>10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>6}\n",
                     "rank", "grp", "step_p50", "occup", "busy", "useful", "hostgap", "MBU", "MFU",
                     "wait_s", "xfer_s", "last");
  for (const auto& r : p["ranks"]) {
    const int rank = r["rank"].get<int>();
    out += fmt::format(
        "{:>4}{} {:>3} {:>8.3f}ms {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>8.5f} {:>9.4f} "
        "{:>9.4f} {:>6}\n",
        rank, rank == straggler ? "*" : " ", r["group"].get<int>(),
        json_number(r, "step_time_p50_s") * 1e3, json_number(r, "occupancy_sampled"),
        json_number(r, "busy_fraction"), json_number(r, "useful_fraction"),
        json_number(r, "host_gap_fraction"), json_number(r, "mbu"), json_number(r, "mfu"),
        json_number(r, "wait_s"), json_number(r, "transfer_s"), r["arrived_last"].get<int>());
  }
  out += fmt::format(
      "{:>5} {:>3} {:>8.3f}ms {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>8.5f}\n", "all", "",
      json_number(m["step_time_s"], "p50") * 1e3, json_number(m, "occupancy_sampled"),
      json_number(m, "busy_fraction"), json_number(m, "useful_fraction"),
      json_number(m, "host_gap_fraction"), json_number(m, "mbu"), json_number(m, "mfu"));
  out += fmt::format(
      "tokens/s {:.1f} | step p95 {:.3f} ms | intensity {:.2f} FLOP/B, ridge {:.1f} -> MFU "
      "ceiling {:.4f} | roofline {:.3f}\n",
      json_number(m, "tokens_per_s"), json_number(m["step_time_s"], "p95") * 1e3,
      json_number(m, "intensity"), json_number(m, "ridge"), json_number(m, "mfu_ceiling"),
      json_number(m, "roofline_fraction"));
  const auto& c = p["collectives"];
  out += fmt::format(
      "collectives {} | skew p50 {:.1f} us p95 {:.1f} us max {:.1f} us | wait {:.1f}% of wall | "
      "straggler rank {} (last in {:.0f}%, excess compute {:+.3f})\n",
      c["count"].get<long long>(), json_number(c["skew_s"], "p50") * 1e6,
      json_number(c["skew_s"], "p95") * 1e6, json_number(c["skew_s"], "max") * 1e6,
      100 * json_number(c, "wait_fraction"), straggler,
      100 * json_number(p["straggler"], "arrived_last_share"),
      json_number(p["straggler"], "excess_compute_fraction"));
  const auto& cs = p["clock_sync"];
  out +=
      fmt::format("clock sync: max offset {:.3f} ms, uncertainty {:.1f} us, violations {}\n",
                  json_number(cs, "max_offset_s") * 1e3, json_number(cs, "max_uncertainty_s") * 1e6,
                  cs["clock_condition_violations"].get<long long>());
  if (p.contains("verification"))
    out += fmt::format("verification: {} (max abs err {:.3g}, tolerance {:.3g})\n",
                       p["verification"]["passed"].get<bool>() ? "PASSED" : "FAILED",
                       json_number(p["verification"], "max_abs_err"),
                       json_number(p["verification"], "tolerance"));
  out += fmt::format("peaks: {:.3g} FLOP/s, {:.3g} B/s ({})\n", json_number(m["peaks"], "flops"),
                     json_number(m["peaks"], "bw"), m["peaks"]["source"].get<std::string>());
  for (const auto& w : p["warnings"]) out += "warning: " + w.get<std::string>() + "\n";
  return out;
}

}  // namespace tpb
