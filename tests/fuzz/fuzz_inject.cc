// libFuzzer target: the --inject grammar. tpb::BadInput is the expected answer to bad text;
// anything else (another exception, a crash, a sanitizer report, an accepted spec outside its
// documented ranges) is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/errors.h"
#include "harness/config/inject_spec.h"
#include "harness/record/json/echo_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto specs = tpb::parse_inject(text);
    if (specs.empty()) __builtin_trap();  // an accepted spec names at least one effect
    for (int world = 1; world <= 8; world *= 2) {
      try {
        tpb::validate_inject_ranks(specs, world);
      } catch (const tpb::BadInput&) {
        continue;
      }
      for (int r = 0; r < world; ++r) {
        const tpb::InjectSpec m = tpb::inject_for_rank(specs, r);
        // The ranges parse_inject promises (docs/ARCHITECTURE.md, inject_spec.cc).
        const bool sane = m.rank == r && m.slowdown >= 1.0 && m.slowdown <= 100.0 &&
                          m.jitter_p >= 0 && m.jitter_p <= 1 && m.jitter_us >= 0 &&
                          m.host_delay_us >= 0 && m.mem_reserve_gib >= 0 &&
                          std::isfinite(m.clock_offset_ms) && m.hang_at_step >= -1 &&
                          m.sm_clock_mhz >= 0 && m.sm_hold_fraction >= 0 && m.sm_hold_fraction < 1;
        if (!sane) __builtin_trap();
        (void)tpb::inject_to_json(m).dump();
      }
    }
  } catch (const tpb::BadInput&) {
  }
  return 0;
}
