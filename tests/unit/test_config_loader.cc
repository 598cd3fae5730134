// The one config loader: NAME under configs/<folder>/ or a path to a .json, and the messages
// each kind keeps for an unknown name, a missing path and malformed JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/config_loader.h"
#include "base/errors.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";
const ConfigKind kModel{"--model", "models", "model", {}};
const ConfigKind kPreset{"--topology", "topologies", "preset", {"default"}, true, true};

TEST(ConfigLoader, NameAndPathLoadTheSameFile) {
  const ConfigFile by_name = load_config(kModel, "tiny", kConfigs);
  const ConfigFile by_path = load_config(kModel, kConfigs + "/models/tiny.json", kConfigs);
  EXPECT_EQ(by_name.stem, "tiny");
  EXPECT_EQ(by_path.stem, "tiny");
  EXPECT_EQ(by_name.json, by_path.json);
  EXPECT_EQ(by_name.path, kConfigs + "/models/tiny.json");
}

TEST(ConfigLoader, KnownNamesAreSortedAndIncludeBuiltins) {
  const auto names = config_names(kPreset, kConfigs);
  ASSERT_FALSE(names.empty());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "default"), names.end());
  EXPECT_TRUE(config_names(kModel, "/nonexistent").empty());
}

TEST(ConfigLoader, UnknownNamesAndMissingPaths) {
  // A '/' in a name would escape the folder: unknown for every kind.
  EXPECT_EQ(bad_input([] {
              load_config(kModel, "../models/tiny", kConfigs);
            }).rfind("--model: unknown model '../models/tiny' (known: ", 0),
            0u);
  EXPECT_EQ(bad_input([] {
              load_config(kPreset, "x/nvlink", kConfigs);
            }).rfind("--topology: unknown preset 'x/nvlink' (known: default, ", 0),
            0u);
  EXPECT_EQ(
      bad_input([] { load_config(kModel, "", kConfigs); }).rfind("--model: unknown model ''", 0),
      0u);
  EXPECT_EQ(bad_input([] { load_config(kModel, "/nonexistent/m.json", kConfigs); }),
            "--model: file '/nonexistent/m.json' not found");
  EXPECT_EQ(bad_input([] {
              load_config(kPreset, "/nonexistent/p.json", kConfigs);
            }).rfind("--topology: unknown preset '/nonexistent/p.json' (known: default", 0),
            0u);
}

TEST(ConfigLoader, MalformedJson) {
  const auto path = std::filesystem::temp_directory_path() / "tpb_test_config_loader.json";
  std::ofstream(path) << "{\"a\": 1,";
  const std::string p = path.string();
  const std::string model = bad_input([&] { load_config(kModel, p, kConfigs); });
  EXPECT_EQ(model.rfind(p + ": malformed JSON: ", 0), 0u) << model;
  const std::string preset = bad_input([&] { load_config(kPreset, p, kConfigs); });
  EXPECT_EQ(preset.rfind("--topology: '" + p + "' is malformed JSON: ", 0), 0u) << preset;
  // The parser's words without its "[json.exception.parse_error.101] " tag.
  EXPECT_EQ(model.find("json.exception"), std::string::npos) << model;
  EXPECT_NE(model.find(": parse error at line 1"), std::string::npos) << model;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tpb
