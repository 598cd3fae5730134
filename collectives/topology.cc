// Placement detection from the kernel's own view (sched_getaffinity, sysfs).
#include "collectives/topology.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tpb {

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string gpu_topology_matrix() {
  // Look on PATH first: popen of a missing binary would print a shell error on stderr.
  const char* path = std::getenv("PATH");
  bool found = false;
  for (std::string dirs = path ? path : ""; !found && !dirs.empty();) {
    const auto colon = dirs.find(':');
    const std::string d = dirs.substr(0, colon);
    dirs = colon == std::string::npos ? "" : dirs.substr(colon + 1);
    found = !d.empty() && ::access((d + "/nvidia-smi").c_str(), X_OK) == 0;
  }
  if (!found) return "";
  std::string out;
  if (FILE* p = ::popen("nvidia-smi topo -m 2>/dev/null", "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

nlohmann::ordered_json detect_placement() {
  nlohmann::ordered_json j;
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  j["cpus_allowed"] = cpus;
  const int cpu = sched_getcpu();
  j["cpu_now"] = cpu;
  // The NUMA node is the nodeN directory linked under the CPU's sysfs entry.
  int node = -1;
  std::error_code ec;
  const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu);
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0) node = std::stoi(name.substr(4));
  }
  j["numa_node"] = node;
  return j;
}

}  // namespace tpb
