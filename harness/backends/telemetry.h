// Per-rank device telemetry during a point (ranks[].telemetry) and the --inject sm_clock lock,
// behind an interface so the point runner builds without CUDA. make_telemetry picks NVML for a
// CUDA device (the registry, harness/backends/registry.cc) and a null sampler for every other
// backend.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harness/config/inject_spec.h"
#include "layers/clock_control.h"
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
  // The device's clock controls (--inject sm_clock's locked form); nullptr when there are none,
  // and then why_no_clock_control() says why.
  virtual ClockControl* clock_control() = 0;
  virtual std::string why_no_clock_control() const = 0;
};

// Never throws for a missing library or GPU: the sampler then reports available: false.
std::unique_ptr<TelemetrySampler> make_telemetry(Device& dev);

// A sampler with nothing to read: every record is {"available": false, "reason": reason}.
std::unique_ptr<TelemetrySampler> make_null_telemetry(const std::string& reason);

// --inject sm_clock on one rank, held for the point: the locked form (SmClockLock through the
// sampler's clock controls, the prior state restored exactly) or the emulated one (a share of
// the SMs held, Device::hold_sms). Undone on destruction, also when the point throws, and by the
// watchdog and the termination signals (base/exit_restore.h).
class ScopedSmClock {
 public:
  ScopedSmClock(TelemetrySampler& t, Device& dev, const InjectSpec& inj);
  ScopedSmClock(const ScopedSmClock&) = delete;
  ScopedSmClock& operator=(const ScopedSmClock&) = delete;
  bool applied() const;
  const std::string& reason() const { return reason_; }
  // Puts the clock back (or frees the SMs) now, so that to_json can say how that went.
  void release() noexcept;
  // The ranks[].telemetry.sm_clock_lock record; null when sm_clock was not asked for.
  nlohmann::ordered_json to_json() const;

 private:
  int mhz_ = 0;
  double fraction_ = 0;
  std::string reason_;
  std::optional<SmClockLock> lock_;
  std::unique_ptr<SmHold> hold_;
  int sms_held_ = 0, sm_count_ = 0;
};

}  // namespace tpb
