// Out-of-line formatting for check failures (keeps <sstream> out of every header).
#include "layers/base/errors.h"

#include <sstream>

namespace tpb {

void throw_check_failure(const char* lib, const char* expr, const std::string& detail,
                         const char* file, int line) {
  std::ostringstream os;
  os << lib << " error: " << expr << " -> " << detail << " at " << file << ":" << line;
  throw BackendError(os.str());
}

}  // namespace tpb
