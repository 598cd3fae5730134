// Times as users write them: "10s", "2ms", "50us" (or "50µs"), "500ns", "1.5min". A bare
// number keeps the unit its option always had, so configs written before units were accepted
// read the same. Used by every option and sub-option that takes a time (ConfigFields,
// --inject's host_delay, jitter and clock_offset, --slo's targets).
#pragma once
#include <optional>
#include <string>

namespace tpb {

// Seconds in one `unit` ("min", "s", "ms", "us", "µs", "ns"); std::logic_error otherwise.
double unit_seconds(const std::string& unit);

// `text` in `unit`; nullopt when it is neither a finite number nor a number with a unit.
std::optional<double> parse_time(const std::string& text, const std::string& unit);

}  // namespace tpb
