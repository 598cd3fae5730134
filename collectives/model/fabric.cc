// Preset "model" sections: every number is range-checked, and every tier must say where its
// figures come from ("source"), so a preset cannot carry an unexplained constant.
#include "collectives/model/fabric.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string_view>

#include "base/config_loader.h"
#include "base/enum_names.h"
#include "base/errors.h"

namespace tpb {

namespace {

// LinkHw's spellings, in the configs and in the results.
constexpr std::array<const char*, 3> kLinkHwNames{"nvlink", "pci", "net"};

[[noreturn]] void bad(const std::string& what) {
  throw BadInput("--topology: " + what);
}

const ConfigKind& preset_kind() {
  static const ConfigKind kind{"--topology", "topologies", "preset", {"default"}, true, true};
  return kind;
}

double number(const nlohmann::json& j, const std::string& key, double lo, double hi,
              const std::string& where) {
  if (!j.contains(key) || !j[key].is_number())
    bad(where + ": " + key + " must be a number in [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "]");
  const double v = j[key].get<double>();
  if (!(v >= lo && v <= hi))
    bad(where + ": " + key + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) +
        ", " + std::to_string(hi) + "]");
  return v;
}

void require_source(const nlohmann::json& j, const std::string& where) {
  if (!j.contains("source") || !j["source"].is_string() || j["source"].get<std::string>().empty())
    bad(where + ": source must say where its figures come from");
}

void only_keys(const nlohmann::json& j, std::initializer_list<const char*> keys,
               const std::string& where) {
  if (!j.is_object()) bad(where + " must be an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) bad(where + ": unknown field '" + it.key() + "'");
  }
}

LinkTier parse_tier(const nlohmann::json& j, const std::string& where, bool inter) {
  if (inter)
    only_keys(j, {"hw", "line_GBps", "efficiency", "nics_per_node", "source", "note"}, where);
  else
    only_keys(j, {"hw", "line_GBps", "efficiency", "source", "note"}, where);
  require_source(j, where);
  LinkTier t;
  const std::string hw = optional_string(j, "hw", "", "--topology: " + where + ": ");
  const std::optional<LinkHw> named = enum_from_name<LinkHw>(kLinkHwNames, hw);
  // Inside a node the links are NVLink or PCIe; between nodes, the network.
  if (!named || (*named == LinkHw::net) != inter)
    bad(where + ": hw must be " + (inter ? "net" : "nvlink or pci") + " (got '" + hw + "')");
  t.hw = *named;
  t.line_GBps = number(j, "line_GBps", 0.1, 100000, where);
  t.efficiency = number(j, "efficiency", 0.01, 1.0, where);
  return t;
}

MeasuredCurve parse_measured(const nlohmann::json& j, const std::string& where) {
  only_keys(j, {"collective", "ranks", "all_reduce", "source", "note"}, where);
  require_source(j, where);
  MeasuredCurve c;
  c.collective = optional_string(j, "collective", "", "--topology: " + where + ": ");
  // A curve is timed through a real collective; "model" would be the model quoting itself.
  static constexpr std::array<std::string_view, 2> kTimed{"mpi", "nccl"};
  if (std::find(kTimed.begin(), kTimed.end(), c.collective) == kTimed.end())
    bad(where + ": collective must be mpi or nccl (what was timed)");
  c.ranks = static_cast<int>(number(j, "ranks", 2, 1 << 20, where));
  if (!j.contains("all_reduce") || !j["all_reduce"].is_array() || j["all_reduce"].size() < 2)
    bad(where + ": all_reduce must list at least two [bytes, seconds] pairs");
  for (const auto& p : j["all_reduce"]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() ||
        p[0].get<double>() < 1 || !(p[1].get<double>() > 0))
      bad(where + ": all_reduce holds [bytes >= 1, seconds > 0] pairs");
    const auto b = static_cast<int64_t>(p[0].get<double>());
    if (!c.points.empty() && b <= c.points.back().first)
      bad(where + ": all_reduce sizes must ascend");
    c.points.emplace_back(b, p[1].get<double>());
  }
  return c;
}

CustomKernel parse_kernel(const nlohmann::json& j, const std::string& where) {
  only_keys(j, {"latency_us", "p2p_efficiency", "source", "note"}, where);
  return {number(j, "latency_us", 0.1, 1000, where), number(j, "p2p_efficiency", 0.01, 1.0, where)};
}

// The custom all-reduce reads peers' memory over NVLink: a preset without NVLink inside the
// node has none (vLLM refuses it beyond two PCIe GPUs; two PCIe GPUs are not modelled).
CustomAllReduce parse_custom(const nlohmann::json& j, LinkHw intra, const std::string& where) {
  only_keys(j, {"max_bytes", "oneshot", "twoshot", "eager_copy", "source", "note"}, where);
  require_source(j, where);
  if (intra != LinkHw::nvlink) bad(where + ": a custom all-reduce needs hw nvlink inside the node");
  for (const char* k : {"oneshot", "twoshot"})
    if (!j.contains(k)) bad(where + ": " + k + " {latency_us, p2p_efficiency} is required");
  CustomAllReduce c;
  const std::string mw = where + ".max_bytes";
  if (!j.contains("max_bytes") || !j["max_bytes"].is_object())
    bad(mw + " must map each group size \"2\", \"4\", \"6\", \"8\" to bytes");
  only_keys(j["max_bytes"], {"2", "4", "6", "8"}, mw);
  for (std::size_t i = 0; i < c.max_bytes.size(); ++i)
    c.max_bytes[i] =
        static_cast<int64_t>(number(j["max_bytes"], std::to_string(2 * (i + 1)), 16, 1e12, mw));
  c.oneshot = parse_kernel(j["oneshot"], where + ".oneshot");
  c.twoshot = parse_kernel(j["twoshot"], where + ".twoshot");
  if (j.contains("eager_copy")) {
    const std::string ew = where + ".eager_copy";
    only_keys(j["eager_copy"], {"latency_us", "hbm_GBps", "source"}, ew);
    require_source(j["eager_copy"], ew);
    c.eager_copy = {number(j["eager_copy"], "latency_us", 0, 1000, ew),
                    number(j["eager_copy"], "hbm_GBps", 1, 1e5, ew)};
  }
  return c;
}

// "nccl" (the release whose tuning constants apply) and "gpu_arch" (where they depend on it).
void parse_release(const nlohmann::json& m, const std::string& w, Fabric& f) {
  if (m.contains("nccl")) {
    if (!m["nccl"].is_string()) bad(w + ": nccl must name a release (\"2.20.3\" or \"2.27.3\")");
    f.nccl = &nccl_tuning(m["nccl"].get<std::string>(), "--topology: " + w + ".nccl");
  }
  if (m.contains("gpu_arch")) {
    f.gpu_arch = parse_gpu_arch(m["gpu_arch"].is_string() ? m["gpu_arch"].get<std::string>() : "");
    if (!f.gpu_arch) bad(w + ": gpu_arch must be ampere, hopper or blackwell");
  }
}

}  // namespace

double MeasuredCurve::time_s(int64_t bytes) const {
  if (bytes <= 0) return 0;
  if (bytes <= points.front().first) return points.front().second;
  const auto& [bl, tl] = points.back();
  if (bytes >= bl) return tl * static_cast<double>(bytes) / static_cast<double>(bl);
  for (std::size_t i = 1; i < points.size(); ++i) {
    const auto& [b1, t1] = points[i];
    if (bytes > b1) continue;
    const auto& [b0, t0] = points[i - 1];
    const double x = (std::log(static_cast<double>(bytes)) - std::log(static_cast<double>(b0))) /
                     (std::log(static_cast<double>(b1)) - std::log(static_cast<double>(b0)));
    return std::exp(std::log(t0) + x * (std::log(t1) - std::log(t0)));
  }
  return tl;
}

const char* link_hw_name(LinkHw hw) {
  return enum_name(kLinkHwNames, hw);
}

Fabric parse_fabric(const nlohmann::json& m, const std::string& where) {
  const std::string w = where + ": model";
  only_keys(m,
            {"gpus_per_node", "intra", "inter", "nvls", "custom_allreduce", "measured", "nccl",
             "gpu_arch", "source", "note"},
            w);
  Fabric f;
  f.gpus_per_node = static_cast<int>(number(m, "gpus_per_node", 1, 1024, w));
  if (m.contains("measured")) {
    if (m.contains("intra") || m.contains("inter") || m.contains("nvls") ||
        m.contains("custom_allreduce"))
      bad(w +
          ": a measured curve stands alone (no intra, inter, nvls or custom_allreduce beside it)");
    f.measured = parse_measured(m["measured"], w + ".measured");
    f.intra.hw = LinkHw::pci;  // unused: the curve answers every collective
    return f;
  }
  if (!m.contains("intra")) bad(w + ": intra (the links inside a node) is required");
  parse_release(m, w, f);
  f.intra = parse_tier(m["intra"], w + ".intra", false);
  if (m.contains("inter")) {
    f.inter = parse_tier(m["inter"], w + ".inter", true);
    f.nics_per_node = static_cast<int>(number(m["inter"], "nics_per_node", 1, 1024, w + ".inter"));
  }
  if (m.contains("nvls")) {
    only_keys(m["nvls"], {"efficiency", "source", "note"}, w + ".nvls");
    require_source(m["nvls"], w + ".nvls");
    if (f.intra.hw != LinkHw::nvlink)
      bad(w + ".nvls: NVLink SHARP needs hw nvlink inside the node");
    f.nvls_efficiency = number(m["nvls"], "efficiency", 0.01, 1.0, w + ".nvls");
  }
  if (m.contains("custom_allreduce"))
    f.custom_ar = parse_custom(m["custom_allreduce"], f.intra.hw, w + ".custom_allreduce");
  return f;
}

Fabric load_fabric(const std::string& text, const std::string& config_dir) {
  const std::size_t colon = text.find(':');
  const std::string stem = text.substr(0, colon);
  const std::string name = stem == "default" ? "nvlink4" : stem;
  const std::string modifier = colon == std::string::npos ? "" : text.substr(colon + 1);
  static constexpr std::string_view kRelease = "nccl-";
  if (colon != std::string::npos && modifier.rfind(kRelease, 0) != 0)
    bad("'" + text + "': a modelled preset's one modifier is :nccl-VERSION (2.20.3 or 2.27.3)");
  const ConfigFile file = load_config(preset_kind(), name, config_dir);
  if (!file.json.is_object() || !file.json.contains("model"))
    bad("preset '" + name + "' describes no modelled interconnect (no model section); " +
        "--backend model needs one of the presets with a model section");
  Fabric f = parse_fabric(file.json["model"], "'" + file.path + "'");
  f.name = optional_string(file.json, "name", file.stem, "--topology: '" + file.path + "': ");
  f.description =
      optional_string(file.json, "description", "", "--topology: '" + file.path + "': ");
  f.preset = file.json;
  if (!modifier.empty() && f.measured)
    bad("'" + text + "': a measured curve answers every collective; it has no NCCL model");
  if (!modifier.empty())
    f.nccl = &nccl_tuning(modifier.substr(kRelease.size()), "--topology: '" + text + "'");
  return f;
}

}  // namespace tpb
