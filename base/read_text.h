// Reading a whole input file (configs, results, presets) with every failure a BadInput that
// names the option. A directory opens fine as an std::ifstream on Linux and then throws
// std::ios_base::failure on the first read, which would escape as an internal error
// (`--config /`), so the file's type is checked first.
#pragma once
#include <string>

namespace tpb {

// The file's bytes. Throws BadInput("<field>: cannot read '<path>': <why>") when `path` is
// missing, not a regular file, or unreadable.
std::string read_text_file(const std::string& path, const std::string& field);

}  // namespace tpb
