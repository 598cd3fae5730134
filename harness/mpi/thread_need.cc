// The config's words that start threads, read as loosely as the fields allow (a sweep may list
// several backends in one string or array).
#include "harness/mpi/thread_need.h"

#include <string>

namespace tpb {

namespace {

// The value as text: a string as it is, anything else as JSON.
// Text that is not UTF-8 is replaced, not refused: the fields' own parsers refuse it later.
std::string text_of(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool mentions(const nlohmann::json& config, const char* key, const char* word) {
  return config.contains(key) && text_of(config.at(key)).find(word) != std::string::npos;
}

bool many_blas_threads(const nlohmann::json& config) {
  if (!config.contains("blas_threads")) return false;
  const nlohmann::json& v = config.at("blas_threads");
  if (v.is_number()) return v.get<double>() > 1;
  try {
    return std::stod(text_of(v)) > 1;
  } catch (...) {
    return true;  // not a number: refused later; until then, assume the worst
  }
}

bool mentions_any(const nlohmann::json& config, const char* key,
                  const std::vector<std::string>& words) {
  for (const std::string& w : words)
    if (mentions(config, key, w.c_str())) return true;
  return false;
}

}  // namespace

bool needs_helper_threads(const nlohmann::json& config, const ThreadedNames& threaded) {
  return mentions_any(config, "backend", threaded.backends) ||
         mentions_any(config, "collective", threaded.collectives) ||
         mentions(config, "inject", "mem_contend") || many_blas_threads(config);
}

}  // namespace tpb
