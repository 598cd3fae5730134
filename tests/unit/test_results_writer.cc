// ResultsWriter's file contract: a fresh run never appends to (or deletes) an earlier run's
// results in the same --out, a resumed sweep keeps its ledger, and bytes that are not UTF-8
// (argv, env) cannot cost a run its results.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/record/json/results_writer.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using oj = nlohmann::ordered_json;

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("tpb-writer-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int lines(const fs::path& p) {
  const std::string t = slurp(p);
  return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
}

TEST(ResultsWriter, SecondFreshRunMovesTheFirstAside) {
  const fs::path d = fresh_dir("archive");
  {
    ResultsWriter w(d.string(), oj::object(), oj::object());
    EXPECT_TRUE(w.archived_to().empty());
    w.add_point({{"id", 1}});
    w.add_point({{"id", 2}});
  }
  ResultsWriter w2(d.string(), oj::object(), oj::object());
  ASSERT_FALSE(w2.archived_to().empty());
  // The first run's files are intact in the archive; the new ledger starts empty.
  EXPECT_EQ(lines(fs::path(w2.archived_to()) / "points.jsonl"), 2);
  EXPECT_EQ(oj::parse(slurp(fs::path(w2.archived_to()) / "results.json"))["points"].size(), 2u);
  EXPECT_FALSE(fs::exists(d / "points.jsonl"));
  w2.add_point({{"id", 3}});
  EXPECT_EQ(lines(d / "points.jsonl"), 1);
  // A third run in the same second gets its own folder.
  ResultsWriter w3(d.string(), oj::object(), oj::object());
  EXPECT_NE(w3.archived_to(), w2.archived_to());
  fs::remove_all(d);
}

TEST(ResultsWriter, KeepLeavesTheLedger) {
  const fs::path d = fresh_dir("keep");
  {
    ResultsWriter w(d.string(), oj::object(), oj::object());
    w.add_point({{"id", 1}});
  }
  ResultsWriter w2(d.string(), oj::object(), oj::object(), Existing::keep);
  EXPECT_TRUE(w2.archived_to().empty());
  w2.add_point({{"id", 2}});
  EXPECT_EQ(lines(d / "points.jsonl"), 2);
  fs::remove_all(d);
}

TEST(ResultsWriter, InvalidUtf8IsReplacedNotFatal) {
  const fs::path d = fresh_dir("utf8");
  oj ctx{{"argv", {std::string("--model=\xff\xfe")}}};
  ResultsWriter w(d.string(), ctx, oj::object());
  w.add_point({{"note", std::string("bad \xc3 byte")}});
  const auto doc = oj::parse(slurp(d / "results.json"));
  EXPECT_EQ(doc["context"]["argv"][0], "--model=\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(oj::parse(slurp(d / "points.jsonl"))["note"], "bad \xef\xbf\xbd byte");
  fs::remove_all(d);
}

}  // namespace
}  // namespace tpb
