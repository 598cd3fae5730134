// Peak figures of one device (configs/hardware/*.json): datasheet dense or measured.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "layers/profile/achievable.h"

namespace tpb {

// What a compute op reaches of its roofline time (roofline time / measured time) at a TP
// degree and a number of new tokens per step, in one phase. Measured by calibrate in real
// layer steps, or stated in a profile with its source; the model backend divides an op's
// roofline time by it. Above 1 is possible: an op whose data sits in cache beats the
// memory roof.
struct OpFraction {
  std::string op, phase;  // op_name(), phase_name()
  int tp = 1;
  int64_t tokens = 1;
  double fraction = 1;
};

struct OpEfficiency {
  std::vector<OpFraction> points;
  std::string source;
  int64_t context = 0;  // decode points: the cached context they were measured at
  // The dtype the fractions were measured in (calibrate's run dtype): an op's fraction of its
  // bf16 roofline says nothing of its fp32 one. "": a profile written before calibrate said it,
  // taken to hold for every dtype as it was then.
  std::string dtype;
  // The backend whose kernels the fractions were measured on: "cuda" lets the model backend
  // carry them past the grid by the CUDA launch plan's launches and work
  // (harness/drive/model/table_fraction.h); "" in a profile written before calibrate said it.
  std::string backend;
  // The engine whose kernels the fractions price: tpbench's own on that backend
  // ("tpbench-cuda"); "" for a table that does not say. The model backend's engine axis.
  std::string engine() const { return backend.empty() ? "" : "tpbench-" + backend; }
  bool empty() const { return points.empty(); }
  bool applies_to(DType t) const { return dtype.empty() || dtype == dtype_name(t); }
  // The op's fraction at (phase, tp, tokens): its points in that phase at the nearest TP
  // degree (in log2), linear in log2(tokens) between the two around `tokens`, the end value
  // outside them. 1 (the roofline) when the op has no point in that phase.
  double fraction(const std::string& op, const std::string& phase, int tp, int64_t tokens) const;
  // The op's points that fraction() reads for (phase, tp): (tokens, fraction) by tokens.
  std::vector<std::pair<int64_t, double>> grid(const std::string& op, const std::string& phase,
                                               int tp) const;
  // Whether the table has a point for the op in that phase.
  bool covers(const std::string& op, const std::string& phase) const;
  // The TP degree whose points fraction() reads for (op, phase, tp): the nearest in log2, the
  // smaller of two equally near; 0 when the op has no point in that phase.
  int nearest_tp(const std::string& op, const std::string& phase, int tp) const;
  // Where a lookup at (phase, tp, tokens) leaves the grid, in words ("" inside it, for every
  // op with points in that phase): a TP degree the table lacks (the nearest one's points are
  // used) or a token count past the ends of that degree's points (the end value is held).
  // tokens < 0: the TP degree alone (a serving step's token count changes every step).
  // `by_launch_plan`: past the grid, times go on by the CUDA launch plan (table_fraction.h).
  std::string outside_grid(const std::string& phase, int tp, int64_t tokens,
                           bool by_launch_plan = false) const;
};

// What one device costs to rent, per hour, and where the figure was published (1.25.0): serve's
// cost per million tokens reads it when --price is not given.
struct HourlyPrice {
  double usd = 0;
  std::string source;
};

struct Hardware {
  std::string name;
  std::map<std::string, double> peak_flops;  // by dtype name, FLOP/s, dense
  double peak_bw = 0;                        // bytes/s, device memory
  double memory_bytes = 0;                   // capacity per device
  double llc_bytes = 0;                      // last-level cache (L2 on GPUs, L3 on CPUs)
  double link_bw = 0;                        // bytes/s per direction to a peer, 0 if unknown
  double sm_clock_mhz = 0;                   // the clock the FLOP peaks are stated at, 0 if unknown
  std::string source;                        // "datasheet (dense)" | "measured (...)"
  bool measure_at_startup = false;           // peaks come from the start-up probe
  OpEfficiency efficiency;                   // empty: every op at its roofline
  Achievable achievable;  // empty: no fractions, no fixed costs (layers/profile/achievable.h)
  std::optional<HourlyPrice> price_per_hour;  // absent: the profile states no price

  // Throws BadInput when the dtype has no peak in this profile.
  double flops_for(DType t) const;
};

Hardware hardware_from_json(const nlohmann::json& j, const std::string& where);
// NAME:datasheet loads NAME without its efficiency table and achievable block: every op at its
// datasheet roofline with no fixed costs, an upper bound on speed (today's model before issue
// 32), named as one in its name and source.
Hardware load_hardware(const std::string& name_or_path, const std::string& config_dir);
inline constexpr const char* kDatasheetSuffix = ":datasheet";
nlohmann::ordered_json hardware_to_json(const Hardware& h);

// The configs/hardware profile of a GPU by its CUDA device name ("NVIDIA H200" -> "h200-sxm"),
// or "" when no profile describes it (a PCIe or NVL variant, an unknown part): its peaks
// differ from the SXM parts' and guessing would misstate MBU and MFU.
std::string hardware_for_device(const std::string& device_name);

}  // namespace tpb
