#include "base/read_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/errors.h"

namespace tpb {

std::string read_text_file(const std::string& path, const std::string& field) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw BadInput(field + ": cannot read '" + path + "': no such file");
  if (!fs::is_regular_file(st))
    throw BadInput(field + ": cannot read '" + path + "': not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(field + ": cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw BadInput(field + ": cannot read '" + path + "': read error");
  return text.str();
}

}  // namespace tpb
