// Where configs/ (models, hardware, topologies, sweeps) is read from when a config does not
// say: $TPB_CONFIG_DIR, else the source tree's configs/.
#pragma once
#include <string>

namespace tpb {

std::string default_config_dir();

}  // namespace tpb
