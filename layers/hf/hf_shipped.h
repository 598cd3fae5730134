// The Hugging Face configs tpbench ships (configs/models/hf/ORG/NAME.json, each a hub repo's
// config.json), found by hub id (ORG/NAME) or by NAME alone.
#pragma once
#include <string>
#include <vector>

namespace tpb {

struct ShippedHf {
  std::string id;    // "meta-llama/Meta-Llama-3.1-8B"
  std::string path;  // CONFIG_DIR/models/hf/meta-llama/Meta-Llama-3.1-8B.json
};

// Every shipped config, sorted by id.
std::vector<ShippedHf> shipped_hf(const std::string& config_dir);

// The config shipped as `name` (ORG/NAME, or NAME where one ORG ships it); an empty path when
// none is. Throws BadInput naming --model when NAME alone is shipped by several ORGs.
ShippedHf find_shipped_hf(const std::string& name, const std::string& config_dir);

}  // namespace tpb
