// Cost per million tokens of a serving point (serve_metrics.h): the price, parsed and matched to
// the point's hardware, over the tokens it served per second.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/errors.h"
#include "harness/serve/serve_metrics.h"

namespace tpb {
namespace {

// The profile's own name, without the `:datasheet` variant's suffix (layers/hardware.h): the
// GPU is the same, and so is its price.
std::string base_gpu_name(const std::string& hw_name) {
  const auto colon = hw_name.find(':');
  return colon == std::string::npos ? hw_name : hw_name.substr(0, colon);
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

GpuPrice parse_one(const std::string& item) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0)
    throw BadInput("--price: expected GPU=USD_PER_HOUR, e.g. h200-sxm=3.5 (got '" + item + "')");
  GpuPrice p;
  p.gpu = item.substr(0, eq);
  const std::string v = item.substr(eq + 1);
  const char* end = v.data() + v.size();
  const auto [ptr, ec] = std::from_chars(v.data(), end, p.usd_per_hour);
  if (v.empty() || ec != std::errc() || ptr != end || !std::isfinite(p.usd_per_hour) ||
      p.usd_per_hour < 0)
    throw BadInput("--price: " + p.gpu + "'s price must be a number of US dollars per GPU-hour " +
                   ">= 0 (got '" + v + "')");
  p.source = "--price";
  return p;
}

}  // namespace

std::optional<double> usd_per_mtok(int64_t gpus, double usd_per_hour, double tokens_per_s) {
  if (!std::isfinite(tokens_per_s) || !(tokens_per_s > 0)) return std::nullopt;
  return static_cast<double>(gpus) * usd_per_hour / 3600.0 / tokens_per_s * 1e6;
}

CostPerMtok cost_per_mtok(const GpuPrice& price, int64_t gpus,
                          std::optional<double> output_tokens_per_s,
                          std::optional<double> total_tokens_per_s) {
  CostPerMtok c;
  c.gpus = gpus;
  c.usd_per_gpu_hour = price.usd_per_hour;
  c.gpu = price.gpu;
  c.price_source = price.source;
  const auto at = [&](std::optional<double> tps) -> Nullable<double> {
    if (!tps) return std::nullopt;
    if (auto v = usd_per_mtok(gpus, price.usd_per_hour, *tps)) return *v;
    return std::nullopt;
  };
  c.output_usd = at(output_tokens_per_s);
  c.total_usd = at(total_tokens_per_s);
  if (!c.output_usd || !c.total_usd)
    c.reason = std::string(c.output_usd ? "total" : "output") +
               " tokens/s is 0 or unmeasured: no tokens to divide the cost by";
  if (!c.output_usd && !c.total_usd)
    c.reason = "output and total tokens/s are 0 or unmeasured: no tokens to divide the cost by";
  return c;
}

std::vector<GpuPrice> parse_prices(const std::string& text) {
  std::vector<GpuPrice> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    GpuPrice p = parse_one(text.substr(start, end - start));
    for (const GpuPrice& q : out)
      if (q.gpu == p.gpu) throw BadInput("--price: " + p.gpu + " is priced twice");
    out.push_back(std::move(p));
    start = end + 1;
  }
  return out;
}

std::string prices_text(const std::vector<GpuPrice>& prices) {
  std::string s;
  for (const GpuPrice& p : prices)
    s += (s.empty() ? "" : ",") + p.gpu + "=" + number_text(p.usd_per_hour);
  return s;
}

std::optional<GpuPrice> price_for(const std::vector<GpuPrice>& given, const std::string& hw_name,
                                  const std::optional<GpuPrice>& profile_price) {
  if (given.empty()) return profile_price;
  const std::string gpu = base_gpu_name(hw_name);
  for (const GpuPrice& p : given)
    if (p.gpu == hw_name || p.gpu == gpu) return p;
  throw BadInput("--price: no price for the point's GPU '" + gpu + "' (its hardware profile; " +
                 "priced: " + prices_text(given) + ")");
}

}  // namespace tpb
