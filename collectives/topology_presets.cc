// Topology preset files and the launch checks. The preset files are the single source of the
// knob values: launch/mpirun_topology.sh reads the same JSON.
#include "collectives/topology_presets.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

#include "base/config_loader.h"
#include "base/errors.h"
#include "collectives/topology.h"

namespace tpb {

namespace {

using Env = std::map<std::string, std::string>;

[[noreturn]] void bad(const std::string& what) {
  throw BadInput("--topology: " + what);
}

// "default" needs no file. A missing path reads as an unknown preset, and a file that is not
// JSON names --topology, as they always have.
const ConfigKind& preset_kind() {
  static const ConfigKind kind{"--topology", "topologies", "preset", {"default"}, true, true};
  return kind;
}

Env env_object(const nlohmann::json& j, const std::string& where) {
  Env out;
  if (!j.is_object()) bad(where + " must be an object of strings");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) bad(where + "." + it.key() + " must be a string");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

// "hosts": {"min": N >= 1, "link_rate": "1gbit"} of a preset for runs across hosts.
void load_hosts(TopologyChoice& c, const nlohmann::json& h, const std::string& path) {
  if (!h.is_object()) bad("'" + path + "': hosts must be an object");
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "min" && it.value().is_number_integer() && it.value().get<int>() >= 1)
      c.min_hosts = it.value().get<int>();
    else if (it.key() == "link_rate" && it.value().is_string())
      c.link_rate = it.value().get<std::string>();
    else if (it.key() != "note")
      bad("'" + path + "': hosts." + it.key() +
          " is not a field (min: an integer >= 1, link_rate: a string, note)");
  }
}

// The hosts whose link the launcher shaped to `rate`, from TPB_LINKS_FILE; "" when none.
std::string hosts_shaped_to(const std::string& rate) {
  const char* path = std::getenv("TPB_LINKS_FILE");
  if (!path) return "";
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  std::string out;
  if (j.is_object() && j.contains("hosts") && j["hosts"].is_array())
    for (const auto& h : j["hosts"])
      if (h.is_object() && h.value("rate", nlohmann::json()) == rate)
        out += (out.empty() ? "" : ",") + h.value("name", std::string("?"));
  return out;
}

void check_hosts(const TopologyChoice& c, int hosts) {
  if (c.min_hosts > hosts)
    bad("preset '" + c.text + "' needs ranks on at least " + std::to_string(c.min_hosts) +
        " hosts and MPI sees " + std::to_string(hosts) +
        ": launch across hosts (launch/netns_hosts.sh mpirun makes them on one machine)");
  if (!c.link_rate.empty() && hosts_shaped_to(c.link_rate).empty())
    bad("preset '" + c.text + "' needs a host link shaped to " + c.link_rate +
        " and TPB_LINKS_FILE shows none: run launch/netns_hosts.sh shape HOST --rate " +
        c.link_rate + " and launch with launch/netns_hosts.sh mpirun");
}

// Loads PRESET.json's section for `family` into `c`.
void load_preset(TopologyChoice& c, const std::string& config_dir) {
  const ConfigFile f = load_config(preset_kind(), c.preset, config_dir);
  const std::string& path = f.path;
  const nlohmann::json& j = f.json;
  if (!j.is_object()) bad("'" + path + "' must hold an object");
  // A preset holds one section per collective family it configures, beside its own fields.
  static constexpr std::array<std::string_view, 6> kKeys{"name", "description", "hosts",
                                                         "mpi",  "nccl",        "model"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(kKeys.begin(), kKeys.end(), it.key()) == kKeys.end())
      bad("'" + path + "': unknown field '" + it.key() + "'");
  c.description = optional_string(j, "description", "", "--topology: '" + path + "': ");
  if (j.contains("hosts")) load_hosts(c, j["hosts"], path);
  if (!j.contains(c.family))
    bad("preset '" + c.preset + "' has no setting for --collective " + c.family +
        (j.contains("model") ? " (it describes a modelled interconnect: --backend model)" : ""));
  const auto& sec = j[c.family];
  if (!sec.is_object()) bad("'" + path + "': " + c.family + " must be an object");
  for (auto it = sec.begin(); it != sec.end(); ++it) {
    if (it.key() == "launcher_env") {
      c.launcher_env = env_object(it.value(), c.family + ".launcher_env");
    } else if (it.key() == "process_env") {
      c.process_env = env_object(it.value(), c.family + ".process_env");
    } else if (it.key() != "note") {
      bad("'" + path + "': unknown field '" + c.family + "." + it.key() + "'");
    }
  }
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_=./:,+@%") == std::string::npos)
    return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace

TopologyChoice resolve_topology(const std::string& text, const std::string& family,
                                const std::string& config_dir) {
  TopologyChoice c;
  c.text = text;
  c.family = family;
  const auto parts = [&] {
    std::vector<std::string> v;
    std::string::size_type start = 0;
    for (;;) {
      const auto at = text.find(':', start);
      v.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
      if (at == std::string::npos) return v;
      start = at + 1;
    }
  }();
  c.preset = parts[0];
  if (c.preset.empty()) bad("empty preset name in '" + text + "'");
  if (c.preset != "default") load_preset(c, config_dir);
  // NCCL's own tuning knobs ride on any nccl preset. Values are passed through in NCCL's
  // spelling after a check against the names NCCL documents, so a typo fails here, not
  // silently inside NCCL.
  static const std::set<std::string> algos{"ring",         "tree", "collnet",  "collnetdirect",
                                           "collnetchain", "nvls", "nvlstree", "pat"};
  static const std::set<std::string> protos{"ll", "ll128", "simple"};
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    const std::string key = parts[i].substr(0, eq);
    std::string val = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
    for (char& ch : val) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (family != "nccl") bad("'" + parts[i] + "' is an NCCL knob; it needs --collective nccl");
    if (key == "algo" && algos.count(val)) {
      c.process_env["NCCL_ALGO"] = parts[i].substr(eq + 1);
    } else if (key == "proto" && protos.count(val)) {
      c.process_env["NCCL_PROTO"] = parts[i].substr(eq + 1);
    } else {
      bad("modifier '" + parts[i] +
          "' is not algo=ring|tree|collnet|collnetdirect|collnetchain|nvls|nvlstree|pat or "
          "proto=ll|ll128|simple");
    }
  }
  return c;
}

std::string launcher_env_mismatch(const TopologyChoice& c) {
  std::string out;
  for (const auto& [k, v] : c.launcher_env) {
    const char* have = std::getenv(k.c_str());
    if (have && v == have) continue;
    out += (out.empty() ? "" : ", ") + k + "=" + (have ? std::string(have) : "<unset>") +
           " (wants " + v + ")";
  }
  return out;
}

std::string mpirun_line(const TopologyChoice& c, int np, const std::vector<std::string>& argv) {
  std::string line = "mpirun -np " + std::to_string(np);
  for (const auto& [k, v] : c.launcher_env) {
    if (k.rfind("OMPI_MCA_", 0) == 0)
      line += " --mca " + k.substr(9) + " " + shell_quote(v);
    else
      line += " -x " + shell_quote(k + "=" + v);
  }
  for (const auto& a : argv) line += " " + shell_quote(a);
  return line;
}

std::vector<TopologyChoice> prepare_topologies(const std::vector<std::string>& texts,
                                               const std::string& family,
                                               const std::string& config_dir, int np,
                                               const std::vector<std::string>& argv, int hosts) {
  std::vector<TopologyChoice> out;
  for (const auto& t : texts.empty() ? std::vector<std::string>{"default"} : texts)
    out.push_back(resolve_topology(t, family, config_dir));
  for (const auto& c : out)
    if (c.launcher_env != out[0].launcher_env || c.process_env != out[0].process_env)
      bad("'" + out[0].text + "' and '" + c.text +
          "' need different process settings, which one launch cannot change (MPI reads them "
          "at MPI_Init, NCCL caches them per process): run one launch per preset "
          "(launch/mpirun_topology.sh) and put them side by side with `tpbench compare`");
  const std::string miss = launcher_env_mismatch(out[0]);
  if (!miss.empty())
    bad("preset '" + out[0].text + "' must be set up by the launcher (" + miss + "); run:\n  " +
        mpirun_line(out[0], np, argv) + "\nor: launch/mpirun_topology.sh " + out[0].preset + " " +
        std::to_string(np) + " -- ...");
  for (const auto& c : out) check_hosts(c, hosts);
  for (const auto& [k, v] : out[0].process_env) ::setenv(k.c_str(), v.c_str(), 1);
  return out;
}

TopologyContext topology_context(const std::string& text, const std::string& family,
                                 const std::string& config_dir) {
  TopologyContext t{resolve_topology(text, family, config_dir), {}, {}, {}};
  for (const char* k : {"OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_btl_tcp_if_include",
                        "OMPI_MCA_coll_libnbc_iallreduce_algorithm", "NCCL_P2P_DISABLE",
                        "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO",
                        "NCCL_P2P_LEVEL", "NCCL_SHM_USE_CUDA_MEMCPY"})
    if (const char* v = std::getenv(k)) t.env_seen[k] = v;
  if (t.choice.preset == "default") {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(config_dir + "/topologies", ec)) {
      if (e.path().extension() != ".json") continue;
      try {
        const TopologyChoice p = resolve_topology(e.path().stem().string(), family, config_dir);
        // A preset for several hosts says where ranks are, which the env cannot tell.
        if (!p.launcher_env.empty() && p.min_hosts <= 1 && launcher_env_mismatch(p).empty())
          t.detected_preset = p.preset;
      } catch (const BadInput&) {  // a preset without this family: not a candidate
      }
    }
  }
  const std::string matrix = gpu_topology_matrix();
  if (!matrix.empty()) t.gpu_topology_matrix = matrix;
  return t;
}

}  // namespace tpb
