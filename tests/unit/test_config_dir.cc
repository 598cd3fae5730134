// Where configs/ and results/plot.py are found when nothing says (harness/config/config_dir.h):
// the order of the search on folders made here, and the error that names every place it looked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness/config/config_dir.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;

// A fresh tree per test: ROOT/bundle/bin/tpbench (no file needed: only its folder is read),
// ROOT/src as the compiled-in source tree. bundle/ stands for an install prefix too: its
// share/tpbench (TPB_DATA_FROM_BIN from bin/) is where `cmake --install` puts the data.
struct Tree {
  fs::path root;
  explicit Tree(const std::string& name)
      : root(fs::temp_directory_path() / ("tpb_config_dir_" + name)) {
    fs::remove_all(root);
    fs::create_directories(root / "bundle" / "bin");
    fs::create_directories(root / "src");
  }
  ~Tree() { fs::remove_all(root); }
  std::string exe() const { return (root / "bundle" / "bin" / "tpbench").string(); }
  std::string src() const { return (root / "src").string(); }
  std::string make(const fs::path& p) const {
    fs::create_directories(root / p);
    return (root / p).string();
  }
  std::string touch(const fs::path& p) const {
    fs::create_directories((root / p).parent_path());
    std::ofstream(root / p) << "#\n";
    return (root / p).string();
  }
  fs::path share() const {
    return (root / "bundle" / "bin" / TPB_DATA_FROM_BIN)
        .lexically_normal()
        .lexically_relative(root);
  }
};

TEST(ConfigDir, DataRootsInOrder) {
  const Tree t("roots");
  const fs::path bin = t.root / "bundle" / "bin";
  EXPECT_EQ(data_roots(t.exe(), t.src()),
            (std::vector<std::string>{bin.string(), (t.root / t.share()).string(),
                                      (t.root / "bundle").string(), t.src()}));
  EXPECT_EQ(data_roots("", t.src()), std::vector<std::string>{t.src()});  // no /proc/self/exe
}

// plot.py goes through the same search as configs/: each nearer place hides the ones after it.
TEST(ConfigDir, PlotScriptSearchOrder) {
  const Tree t("plot");
  const auto roots = data_roots(t.exe(), t.src());
  EXPECT_EQ(find_shipped("results/plot.py", roots), std::nullopt);
  for (const fs::path& where :
       {fs::path("src"), fs::path("bundle"), t.share(), fs::path("bundle/bin")}) {
    const std::string made = t.touch(where / "results" / "plot.py");
    EXPECT_EQ(find_shipped("results/plot.py", roots), made) << where;
  }
}

TEST(ConfigDir, SearchOrder) {
  const Tree t("order");
  const std::string source = t.make("src/configs");
  EXPECT_EQ(find_config_dir(std::nullopt, t.exe(), t.src()), source);  // nothing nearer
  EXPECT_EQ(find_config_dir(std::nullopt, "", t.src()), source);       // no /proc/self/exe
  const std::string above = t.make("bundle/configs");
  EXPECT_EQ(find_config_dir(std::nullopt, t.exe(), t.src()), above);
  const std::string installed = t.make(t.share() / "configs");
  EXPECT_EQ(find_config_dir(std::nullopt, t.exe(), t.src()), installed);
  const std::string beside = t.make("bundle/bin/configs");
  EXPECT_EQ(find_config_dir(std::nullopt, t.exe(), t.src()), beside);
  // $TPB_CONFIG_DIR first; empty is unset; one that is no folder is named, not skipped.
  const std::string env = t.make("env");
  EXPECT_EQ(find_config_dir(env, t.exe(), t.src()), env);
  EXPECT_EQ(find_config_dir("", t.exe(), t.src()), beside);
  EXPECT_EQ(bad_input([&] { find_config_dir(env + "/nothing", t.exe(), t.src()); }),
            "--config-dir: $TPB_CONFIG_DIR is '" + env +
                "/nothing', which is no folder; point it at a configs/ folder or unset it");
}

TEST(ConfigDir, NoneFoundNamesWhereItLooked) {
  const Tree t("none");
  const std::string msg = bad_input([&] { find_config_dir(std::nullopt, t.exe(), t.src()); });
  EXPECT_EQ(
      msg.rfind("--config-dir: no configs/ folder found (looked in $TPB_CONFIG_DIR (unset), ", 0),
      0u)
      << msg;
  for (const fs::path& p : {t.root / "bundle" / "bin" / "configs", t.root / t.share() / "configs",
                            t.root / "bundle" / "configs", t.root / "src" / "configs"})
    EXPECT_NE(msg.find(p.string()), std::string::npos) << p << " in " << msg;
}

TEST(ConfigDir, AConfigThatSaysSkipsTheSearch) {
  EXPECT_EQ(config_dir_for({{"config_dir", "/given"}}), "/given");
  // This test binary runs from the build tree, whose source tree holds configs/.
  EXPECT_TRUE(fs::is_directory(config_dir_for(nlohmann::json::object()) + "/models"));
}

}  // namespace
}  // namespace tpb
