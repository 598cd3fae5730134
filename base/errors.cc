// Out-of-line formatting of error lines and check failures (keeps <sstream> out of every header).
#include "base/errors.h"

#include <sstream>

namespace tpb {

std::string rank_error_line(int rank, const std::string& what) {
  return "tpbench: error on rank " + std::to_string(rank) + ": " + what;
}

void throw_check_failure(const char* lib, const char* expr, const std::string& detail,
                         const char* file, int line) {
  std::ostringstream os;
  os << lib << " error: " << expr << " -> " << detail << " at " << file << ":" << line;
  throw BackendError(os.str());
}

}  // namespace tpb
