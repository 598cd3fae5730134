// NVML through dlopen: the few entry points telemetry needs, declared here by their stable C
// ABI (nvml.h is not part of the toolkit install, and the build must not need a driver).
#include "layers/cuda/nvml_telemetry.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/exit_restore.h"

namespace tpb {
namespace {

using nvmlReturn_t = int;  // NVML_SUCCESS == 0
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2, kTempGpu = 0;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct NvmlApi {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*lock)(nvmlDevice_t, unsigned, unsigned) = nullptr;
  nvmlReturn_t (*unlock)(nvmlDevice_t) = nullptr;
  nvmlReturn_t (*app_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*app_default)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*set_app)(nvmlDevice_t, unsigned, unsigned) = nullptr;  // (mem, graphics)
  nvmlReturn_t (*reset_app)(nvmlDevice_t) = nullptr;

  std::string err(const char* fn, nvmlReturn_t r) const {
    return std::string(fn) + ": " + (error_string ? error_string(r) : "error") + " (" +
           std::to_string(r) + ")";
  }
  ~NvmlApi() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

namespace {

template <class F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

}  // namespace

std::vector<std::string> throttle_reason_names(uint64_t mask) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  std::vector<std::string> out;
  uint64_t known = 0;
  for (const auto& [bit, name] : kNames) {
    known |= bit;
    if (mask & bit) out.emplace_back(name);
  }
  if (mask & ~known) out.emplace_back("other");
  return out;
}

nlohmann::ordered_json summarize_samples(const std::vector<NvmlSample>& samples, double period_s) {
  nlohmann::ordered_json j;
  j["available"] = true;
  j["source"] = "nvml";
  j["samples"] = samples.size();
  j["period_s"] = period_s;
  auto stat = [&](const char* key, double NvmlSample::*field) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    int n = 0;
    for (const NvmlSample& s : samples) {
      const double v = s.*field;
      if (v < 0) continue;  // not reported
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      ++n;
    }
    if (n > 0) j[key] = {{"mean", sum / n}, {"min", lo}, {"max", hi}};
  };
  stat("utilization_gpu_pct", &NvmlSample::util_gpu_pct);
  stat("utilization_mem_pct", &NvmlSample::util_mem_pct);
  stat("sm_clock_mhz", &NvmlSample::sm_clock_mhz);
  stat("mem_clock_mhz", &NvmlSample::mem_clock_mhz);
  stat("power_w", &NvmlSample::power_w);
  stat("temperature_c", &NvmlSample::temperature_c);
  stat("memory_used_bytes", &NvmlSample::mem_used_bytes);

  uint64_t any = 0;
  int read = 0, throttled = 0;
  double total = -1;
  for (const NvmlSample& s : samples) {
    total = std::max(total, s.mem_total_bytes);
    if (s.throttle_mask < 0) continue;
    const auto m = static_cast<uint64_t>(s.throttle_mask);
    any |= m;
    ++read;
    if (m & ~uint64_t{0x1}) ++throttled;  // idle is not throttling
  }
  if (total >= 0) j["memory_total_bytes"] = total;
  if (read > 0) {
    j["throttle_reasons"] = throttle_reason_names(any);
    j["throttled_sample_fraction"] = static_cast<double>(throttled) / read;
  }
  return j;
}

NvmlTelemetry::NvmlTelemetry(const std::string& pci_bus_id, const std::string& library,
                             double period_s)
    : period_s_(period_s) {
  auto api = std::make_unique<NvmlApi>();
  api->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    const char* e = dlerror();
    reason_ = "dlopen(" + library + ") failed: " + (e ? e : "unknown error");
    return;
  }
  // _v2 entry points exist since driver 325; the clocks-event name since 535 (older: throttle).
  const bool core = bind(api->lib, "nvmlInit_v2", api->init) &&
                    bind(api->lib, "nvmlShutdown", api->shutdown) &&
                    bind(api->lib, "nvmlErrorString", api->error_string) &&
                    bind(api->lib, "nvmlDeviceGetHandleByPciBusId_v2", api->by_pci) &&
                    bind(api->lib, "nvmlDeviceGetHandleByIndex_v2", api->by_index);
  if (!core) {
    reason_ = library + " lacks the NVML entry points (nvmlInit_v2 ...)";
    api->shutdown = nullptr;
    return;
  }
  bind(api->lib, "nvmlDeviceGetUtilizationRates", api->utilization);
  bind(api->lib, "nvmlDeviceGetClockInfo", api->clock);
  bind(api->lib, "nvmlDeviceGetPowerUsage", api->power);
  bind(api->lib, "nvmlDeviceGetTemperature", api->temperature);
  if (!bind(api->lib, "nvmlDeviceGetCurrentClocksEventReasons", api->reasons))
    bind(api->lib, "nvmlDeviceGetCurrentClocksThrottleReasons", api->reasons);
  bind(api->lib, "nvmlDeviceGetMemoryInfo", api->memory);
  bind(api->lib, "nvmlDeviceSetGpuLockedClocks", api->lock);
  bind(api->lib, "nvmlDeviceResetGpuLockedClocks", api->unlock);
  // Application clocks: deprecated in CUDA 13's nvml.h, still exported; read to be put back.
  bind(api->lib, "nvmlDeviceGetApplicationsClock", api->app_clock);
  bind(api->lib, "nvmlDeviceGetDefaultApplicationsClock", api->app_default);
  bind(api->lib, "nvmlDeviceSetApplicationsClocks", api->set_app);
  bind(api->lib, "nvmlDeviceResetApplicationsClocks", api->reset_app);

  if (const nvmlReturn_t r = api->init(); r != 0) {
    reason_ = api->err("nvmlInit_v2", r);
    api->shutdown = nullptr;  // nothing to shut down
    return;
  }
  nvmlDevice_t dev = nullptr;
  const nvmlReturn_t r =
      pci_bus_id.empty() ? api->by_index(0, &dev) : api->by_pci(pci_bus_id.c_str(), &dev);
  if (r != 0) {
    reason_ = api->err(pci_bus_id.empty() ? "nvmlDeviceGetHandleByIndex_v2"
                                          : "nvmlDeviceGetHandleByPciBusId_v2",
                       r) +
              (pci_bus_id.empty() ? "" : " for " + pci_bus_id);
    return;
  }
  device_ = dev;
  api_ = std::move(api);
}

NvmlTelemetry::~NvmlTelemetry() {
  if (thread_.joinable()) stop();
}

NvmlSample NvmlTelemetry::sample_now() {
  NvmlSample s;
  if (!api_) return s;
  s.t_s = 1e-9 * static_cast<double>(now_ns() - t0_ns_);
  const NvmlApi& a = *api_;
  if (nvmlUtilization_t u{}; a.utilization && a.utilization(device_, &u) == 0) {
    s.util_gpu_pct = u.gpu;
    s.util_mem_pct = u.memory;
  }
  if (unsigned v = 0; a.clock && a.clock(device_, kClockSm, &v) == 0) s.sm_clock_mhz = v;
  if (unsigned v = 0; a.clock && a.clock(device_, kClockMem, &v) == 0) s.mem_clock_mhz = v;
  if (unsigned mw = 0; a.power && a.power(device_, &mw) == 0) s.power_w = mw * 1e-3;
  if (unsigned c = 0; a.temperature && a.temperature(device_, kTempGpu, &c) == 0)
    s.temperature_c = c;
  if (unsigned long long m = 0; a.reasons && a.reasons(device_, &m) == 0)
    s.throttle_mask = static_cast<int64_t>(m);
  if (nvmlMemory_t m{}; a.memory && a.memory(device_, &m) == 0) {
    s.mem_used_bytes = static_cast<double>(m.used);
    s.mem_total_bytes = static_cast<double>(m.total);
  }
  return s;
}

void NvmlTelemetry::start() {
  if (!api_ || thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    samples_.clear();
    stop_ = false;
    t0_ns_ = now_ns();
    samples_.push_back(sample_now());
  }
  thread_ = std::thread([this] { loop(); });
}

void NvmlTelemetry::loop() {
  // A SIGTERM taken here, inside an NVML call, would leave the clock restore (which calls NVML
  // from the handler) waiting on the lock this thread holds: such signals go to another thread.
  block_exit_signals_in_this_thread();
  std::unique_lock<std::mutex> g(mu_);
  const auto period = std::chrono::duration<double>(period_s_);
  while (!cv_.wait_for(g, period, [this] { return stop_; })) {
    g.unlock();
    NvmlSample s = sample_now();  // NVML calls take ~ms: not under the lock
    g.lock();
    samples_.push_back(s);
  }
}

nlohmann::ordered_json NvmlTelemetry::stop() {
  if (!api_) {
    mean_util_ = -1;
    return {{"available", false}, {"reason", reason_}};
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  samples_.push_back(sample_now());
  nlohmann::ordered_json j = summarize_samples(samples_, period_s_);
  mean_util_ = j.contains("utilization_gpu_pct")
                   ? j["utilization_gpu_pct"]["mean"].get<double>() / 100.0
                   : -1;
  return j;
}

// The clock controls. No NVML call reads the locked range back, so read() leaves `gpu` unknown
// and SmClockLock asks the user to state it (layers/clock_control.cc).
ClockState NvmlTelemetry::read() noexcept {
  ClockState s;
  if (!api_ || !api_->app_clock) return s;
  const NvmlApi& a = *api_;
  unsigned mem = 0, gr = 0;
  if (a.app_clock(device_, kClockMem, &mem) == 0 && a.app_clock(device_, kClockGraphics, &gr) == 0)
    s.app = AppClocks{mem, gr};
  if (a.app_default && a.app_default(device_, kClockMem, &mem) == 0 &&
      a.app_default(device_, kClockGraphics, &gr) == 0)
    s.app_default = AppClocks{mem, gr};
  return s;
}

int NvmlTelemetry::lock_gpu(unsigned min_mhz, unsigned max_mhz) noexcept {
  return api_ && api_->lock ? api_->lock(device_, min_mhz, max_mhz) : kNoNvml;
}

int NvmlTelemetry::unlock_gpu() noexcept {
  return api_ && api_->unlock ? api_->unlock(device_) : kNoNvml;
}

int NvmlTelemetry::set_app(AppClocks c) noexcept {
  return api_ && api_->set_app ? api_->set_app(device_, c.mem_mhz, c.sm_mhz) : kNoNvml;
}

int NvmlTelemetry::reset_app() noexcept {
  return api_ && api_->reset_app ? api_->reset_app(device_) : kNoNvml;
}

std::string NvmlTelemetry::describe(int code) const {
  if (code == kNoNvml)
    return api_ ? "this driver's NVML lacks the clock call" : "nvml unavailable: " + reason_;
  return api_->err("nvml", code);
}

}  // namespace tpb
