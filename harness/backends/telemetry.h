// Per-rank device telemetry during a point (ranks[].telemetry) and the --inject sm_clock lock,
// behind an interface so the point runner builds without CUDA. make_telemetry picks NVML for a
// CUDA device (the registry, harness/backends/registry.cc) and a null sampler for every other
// backend.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "layers/device.h"

namespace tpb {

class TelemetrySampler {
 public:
  virtual ~TelemetrySampler() = default;
  // Samples between start() and stop(); stop() returns the ranks[].telemetry record
  // ({"available": false, "reason": ...} where there is nothing to read).
  virtual void start() = 0;
  virtual nlohmann::ordered_json stop() = 0;
  // Mean utilization.gpu of the last stop() as a fraction (0..1); -1 when not read.
  virtual double mean_utilization() const = 0;
  // Locks the SM clock to `mhz`: "" when applied, else why not. unlock restores the default.
  virtual std::string lock_sm_clock(int mhz) = 0;
  virtual void unlock_sm_clock() noexcept = 0;
};

// Never throws for a missing library or GPU: the sampler then reports available: false.
std::unique_ptr<TelemetrySampler> make_telemetry(Device& dev);

// A sampler with nothing to read: every record is {"available": false, "reason": reason}.
std::unique_ptr<TelemetrySampler> make_null_telemetry(const std::string& reason);

// RAII --inject sm_clock: locked (where permitted) for its lifetime, restored on destruction,
// also when the point throws. mhz <= 0 does nothing.
class ScopedSmClock {
 public:
  ScopedSmClock(TelemetrySampler& t, int mhz);
  ~ScopedSmClock();
  ScopedSmClock(const ScopedSmClock&) = delete;
  ScopedSmClock& operator=(const ScopedSmClock&) = delete;
  bool applied() const { return mhz_ > 0 && reason_.empty(); }
  // {requested_mhz, applied, reason?}; null when no lock was requested.
  nlohmann::ordered_json to_json() const;

 private:
  TelemetrySampler& t_;
  int mhz_;
  std::string reason_;
};

}  // namespace tpb
