// Parser for --inject. Strict: unknown keys, bad numbers and out-of-range values are errors,
// because a silently ignored injection yields a "clean" result the user did not ask for.
#include "harness/config/inject_spec.h"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "base/units.h"

namespace tpb {

namespace {

// Keeps empty fields, a trailing one included ("a," -> {"a", ""}), so that a stray separator
// is reported instead of silently dropped.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at; (at = s.find(sep, start)) != std::string::npos; start = at + 1)
    out.push_back(s.substr(start, at - start));
  out.push_back(s.substr(start));
  return out;
}

[[noreturn]] void fail(const std::string& what) {
  throw BadInput("--inject: " + what);
}

double number(const std::string& key, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0 || !std::isfinite(x))
    fail(key + " needs a number (got '" + v + "')");
  if (x < lo || x > hi) {
    std::ostringstream os;
    os << key << " must be in [" << lo << ", " << hi << "] (got " << v << ")";
    fail(os.str());
  }
  return x;
}

// A time in `unit` (bare numbers) or with its own: host_delay=2ms, jitter=0.1@500us.
double time_in(const std::string& key, const std::string& v, const std::string& unit, double lo,
               double hi) {
  const std::optional<double> x = parse_time(v, unit);
  if (!x)
    fail(key + " needs a time like 500us or 2ms, bare numbers in " + unit + " (got '" + v + "')");
  if (*x < lo || *x > hi) {
    std::ostringstream os;
    os << key << " must be in [" << lo << ", " << hi << "] " << unit << " (got " << v << ")";
    fail(os.str());
  }
  return *x;
}

// Counts (ranks, steps, MHz) are integers: 1.5 is refused rather than truncated.
int integer(const std::string& key, const std::string& v, double lo, double hi) {
  const double x = number(key, v, lo, hi);
  if (x != std::floor(x)) fail(key + " needs an integer (got '" + v + "')");
  return static_cast<int>(x);
}

// "unlocked" or "MIN-MAX" in MHz: the GPU's lock before the run, which sm_clock restores.
GpuLock prior_lock(const std::string& v) {
  if (v == "unlocked") return {};
  const auto dash = v.find('-');
  if (dash == std::string::npos)
    fail("sm_clock prior needs 'unlocked' or MIN-MAX in MHz, e.g. 1200@1410-1980 (got '" + v +
         "')");
  const int lo = integer("sm_clock prior min", v.substr(0, dash), 1.0, 1e5);
  const int hi = integer("sm_clock prior max", v.substr(dash + 1), 1.0, 1e5);
  if (lo > hi) fail("sm_clock prior min must be <= max (got '" + v + "')");
  return {true, static_cast<unsigned>(lo), static_cast<unsigned>(hi)};
}

// sm_clock=MHz[@PRIOR] (locked) or sm_clock=emulate@F (a share F of the SMs held).
void sm_clock(InjectSpec& s, const std::string& v) {
  const auto at = v.find('@');
  const std::string head = v.substr(0, at);
  if (head == "emulate") {
    if (at == std::string::npos)
      fail("sm_clock=emulate needs @F, the share of SMs to hold, e.g. emulate@0.3");
    s.sm_hold_fraction = number("sm_clock emulate share", v.substr(at + 1), 0.01, 0.99);
    return;
  }
  s.sm_clock_mhz = integer("sm_clock", head, 1.0, 1e5);
  if (at != std::string::npos) s.sm_clock_prior = prior_lock(v.substr(at + 1));
}

// slow_op=OP@F: a compute op of a layer or of the serving step's end, by its results name.
void slow_op(InjectSpec& s, const std::string& v) {
  const auto at = v.find('@');
  if (at == std::string::npos) fail("slow_op needs OP@F, e.g. attention@2 (got '" + v + "')");
  const std::string name = v.substr(0, at);
  std::string known;
  for (int k = 0; k < static_cast<int>(Op::compute); ++k) {
    const Op op = static_cast<Op>(k);
    if (op_is_collective(op)) continue;
    if (name == op_name(op)) s.slow_op = op;
    known += std::string(known.empty() ? "" : ", ") + op_name(op);
  }
  if (s.slow_op == Op::count)
    fail("slow_op: unknown compute op '" + name + "' (known: " + known + ")");
  s.slow_op_factor = number("slow_op factor", v.substr(at + 1), 1.0, 100.0);
}

void apply(InjectSpec& s, const std::string& key, const std::string& v) {
  if (key == "slowdown") {
    s.slowdown = number(key, v, 1.0, 100.0);
  } else if (key == "jitter") {
    const auto at = v.find('@');
    if (at == std::string::npos) fail("jitter needs P@TIME, e.g. 0.1@500us (got '" + v + "')");
    s.jitter_p = number("jitter probability", v.substr(0, at), 0.0, 1.0);
    s.jitter_us = time_in("jitter time", v.substr(at + 1), "us", 0.0, 1e7);
  } else if (key == "host_delay") {
    s.host_delay_us = time_in(key, v, "us", 0.0, 1e7);
  } else if (key == "mem_reserve") {
    s.mem_reserve_gib = number(key, v, 0.0, 1e5);
  } else if (key == "mem_contend") {
    s.mem_contend = number(key, v, 0.0, 1.0) != 0.0;
  } else if (key == "clock_offset") {
    s.clock_offset_ms = time_in(key, v, "ms", -1e6, 1e6);
  } else if (key == "clock_drift") {
    s.clock_drift_ppm = number(key, v, -1e5, 1e5);
  } else if (key == "hang_at_step") {
    s.hang_at_step = integer(key, v, 0.0, 1e9);
  } else if (key == "sm_clock") {
    sm_clock(s, v);
  } else if (key == "slow_op") {
    slow_op(s, v);
  } else {
    fail("unknown key '" + key +
         "' (expected slowdown, jitter, host_delay, mem_reserve, mem_contend, clock_offset, "
         "clock_drift, hang_at_step, sm_clock, slow_op)");
  }
}

}  // namespace

std::vector<InjectSpec> parse_inject(const std::string& text) {
  std::vector<InjectSpec> out;
  for (const std::string& entry : split(text, ',')) {
    if (entry.empty()) fail("empty entry in '" + text + "'");
    const auto parts = split(entry, ':');
    InjectSpec s;
    bool have_rank = false;
    std::set<std::string> seen;  // a key given twice in one entry is a typo, not "last wins"
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto eq = parts[i].find('=');
      if (eq == std::string::npos) fail("expected key=value, got '" + parts[i] + "'");
      const std::string key = parts[i].substr(0, eq), val = parts[i].substr(eq + 1);
      if (i == 0) {
        if (key != "rank") fail("each entry starts with rank=R or rank=all (got '" + entry + "')");
        s.rank = val == "all" ? -1 : integer("rank", val, 0, 1e6);
        have_rank = true;
        continue;
      }
      if (!seen.insert(key).second) fail("key '" + key + "' given twice in '" + entry + "'");
      apply(s, key, val);
    }
    if (!have_rank || parts.size() < 2) fail("entry '" + entry + "' names no effect");
    out.push_back(s);
  }
  return out;
}

InjectSpec inject_for_rank(const std::vector<InjectSpec>& specs, int rank) {
  InjectSpec m;
  m.rank = rank;
  for (const auto& s : specs) {
    if (s.rank != -1 && s.rank != rank) continue;
    if (s.slowdown != 1.0) m.slowdown = s.slowdown;
    if (s.jitter_p > 0) m.jitter_p = s.jitter_p, m.jitter_us = s.jitter_us;
    if (s.host_delay_us > 0) m.host_delay_us = s.host_delay_us;
    if (s.mem_reserve_gib > 0) m.mem_reserve_gib = s.mem_reserve_gib;
    if (s.mem_contend) m.mem_contend = true;
    if (s.clock_offset_ms != 0) m.clock_offset_ms = s.clock_offset_ms;
    if (s.clock_drift_ppm != 0) m.clock_drift_ppm = s.clock_drift_ppm;
    if (s.hang_at_step >= 0) m.hang_at_step = s.hang_at_step;
    if (s.sm_clock_mhz > 0 || s.sm_hold_fraction > 0) {  // one form per rank: the later entry's
      m.sm_clock_mhz = s.sm_clock_mhz;
      m.sm_clock_prior = s.sm_clock_prior;
      m.sm_hold_fraction = s.sm_hold_fraction;
    }
    if (s.slow_op != Op::count) m.slow_op = s.slow_op, m.slow_op_factor = s.slow_op_factor;
  }
  return m;
}

void validate_inject_ranks(const std::vector<InjectSpec>& specs, int world) {
  for (const auto& s : specs)
    if (s.rank >= world)
      fail("rank " + std::to_string(s.rank) + " is out of range for " + std::to_string(world) +
           " ranks");
}

}  // namespace tpb
