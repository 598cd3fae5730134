// Out-of-line formatting of error lines and check failures (keeps <sstream> out of every header).
#include "base/errors.h"

#include <sstream>

namespace tpb {

std::string rank_error_line(int rank, const std::string& what) {
  return "tpbench: error on rank " + std::to_string(rank) + ": " + what;
}

std::string json_error_text(const std::exception& e) {
  const std::string what = e.what();
  const auto end = what.rfind("] ", what.find(' '));  // the tag is the first word
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2)
                                                                            : what;
}

void throw_check_failure(const char* lib, const char* expr, const std::string& detail,
                         const char* file, int line) {
  std::ostringstream os;
  os << lib << " error: " << expr << " -> " << detail << " at " << file << ":" << line;
  throw BackendError(os.str());
}

}  // namespace tpb
