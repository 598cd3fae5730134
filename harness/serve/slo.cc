// --slo: latency targets for goodput, bare numbers in milliseconds on the command line (or a
// time with its unit), seconds inside.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/errors.h"
#include "base/units.h"
#include "harness/serve/serve_metrics.h"

namespace tpb {
namespace {

std::string ms_text(double s) {
  // %.15g drops the binary noise that ms -> s -> ms adds (0.2 * 1000 -> 200, not 200.00000003).
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", s * 1e3);
  return buf;
}

double ms_value(const std::string& key, const std::string& v, const std::string& text,
                const std::string& flag = "--slo") {
  // A time with its unit (200ms, 1.5s), or bare milliseconds as vLLM's --goodput takes them.
  const std::optional<double> ms = parse_time(v, "ms");
  if (!ms || !(*ms > 0))
    throw BadInput(flag + ": " + key +
                   " needs a time > 0: 200ms, 1.5s, or bare milliseconds (got '" + text + "')");
  return *ms / 1e3;
}

}  // namespace

std::string SloSpec::text() const {
  std::string s;
  auto add = [&s](const char* key, const std::optional<double>& v) {
    if (v) s += (s.empty() ? "" : ",") + std::string(key) + "=" + ms_text(*v);
  };
  add("ttft", ttft_s);
  add("tpot", tpot_s);
  add("itl_p95", itl_p95_s);
  add("e2el", e2el_s);
  return s;
}

SloSpec parse_slo(const std::string& text) {
  SloSpec slo;
  if (text.empty()) return slo;
  size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    std::optional<double>* slot = key == "ttft"      ? &slo.ttft_s
                                  : key == "tpot"    ? &slo.tpot_s
                                  : key == "itl_p95" ? &slo.itl_p95_s
                                  : key == "e2el"    ? &slo.e2el_s
                                                     : nullptr;
    if (!slot)
      throw BadInput("--slo: unknown key '" + key +
                     "' (the keys are ttft, tpot, itl_p95, e2el; got '" + text + "')");
    if (eq == std::string::npos)
      throw BadInput("--slo: " + key + " needs =MS (got '" + text + "')");
    if (*slot) throw BadInput("--slo: " + key + " given twice (got '" + text + "')");
    *slot = ms_value(key, item.substr(eq + 1), text);
    start = end + 1;
  }
  return slo;
}

// vLLM's spelling: items split on spaces (its nargs="+" arrives here joined by spaces), each
// KEY:MS; vLLM takes ttft, tpot and e2el only, so itl_p95 stays --slo's.
SloSpec parse_goodput(const std::string& text) {
  SloSpec slo;
  std::size_t start = 0, items = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find(' ', start), text.size());
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    ++items;
    const auto colon = item.find(':');
    const std::string key = item.substr(0, colon);
    std::optional<double>* slot = key == "ttft"   ? &slo.ttft_s
                                  : key == "tpot" ? &slo.tpot_s
                                  : key == "e2el" ? &slo.e2el_s
                                                  : nullptr;
    if (!slot || colon == std::string::npos)
      throw BadInput("--goodput: expected KEY:MS with KEY ttft, tpot or e2el (got '" + text + "')");
    if (*slot) throw BadInput("--goodput: " + key + " given twice (got '" + text + "')");
    *slot = ms_value(key, item.substr(colon + 1), text, "--goodput");
  }
  if (items == 0) throw BadInput("--goodput: expected KEY:MS items, e.g. ttft:200 tpot:50");
  return slo;
}

}  // namespace tpb
