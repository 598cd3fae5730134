#include "harness/config/config_dir.h"

#include <cstdlib>

namespace tpb {

std::string default_config_dir() {
  if (const char* d = std::getenv("TPB_CONFIG_DIR")) return d;
  return TPB_SOURCE_DIR "/configs";
}

}  // namespace tpb
