// The CLI's words: "did you mean" for mistyped flags and keys, times with units, and the one
// boolean style with its aliases.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/did_you_mean.h"
#include "base/errors.h"
#include "harness/config/cli.h"
#include "harness/config/config_fields.h"

namespace tpb {
namespace {

TEST(DidYouMean, EditDistanceCountsTranspositionsOnce) {
  EXPECT_EQ(edit_distance("--batch", "--batch"), 0u);
  EXPECT_EQ(edit_distance("--bach", "--batch"), 1u);   // a deletion
  EXPECT_EQ(edit_distance("--bacth", "--batch"), 1u);  // a transposition
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(DidYouMean, NearestOrNothing) {
  const std::vector<std::string> flags = {"--batch", "--backend", "--context", "--out"};
  EXPECT_EQ(nearest_name("--bach", flags), "--batch");
  EXPECT_EQ(nearest_name("--ot", flags), "--out");
  EXPECT_EQ(nearest_name("--contxet", flags), "--context");
  EXPECT_EQ(nearest_name("--frobnicate", flags), "");  // unlike every flag: no guess
}

std::string error_of(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  try {
    parse_cli(static_cast<int>(argv.size()), argv.data());
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(DidYouMean, UnknownFlagNamesItAndTheNearestOption) {
  const std::string e = error_of({"tpbench", "run", "--batch", "4", "--contxt", "64"});
  EXPECT_EQ(e.rfind("--contxt: unknown option for run (did you mean --context?)", 0), 0u) << e;
  EXPECT_NE(error_of({"tpbench", "serve", "--max-concurency", "4"}).find("--max-concurrency"),
            std::string::npos);
}

double duration_of(const nlohmann::json& v, const std::string& unit) {
  const nlohmann::json cfg = {{"t", v}};
  ConfigFields f(cfg);
  return f.duration("t", -1, unit, 0, 1e9);
}

TEST(ConfigDuration, UnitsAndBareNumbers) {
  EXPECT_DOUBLE_EQ(duration_of("10s", "s"), 10);
  EXPECT_DOUBLE_EQ(duration_of("10min", "s"), 600);
  EXPECT_DOUBLE_EQ(duration_of("250ms", "s"), 0.25);
  EXPECT_DOUBLE_EQ(duration_of("2ms", "us"), 2000);
  EXPECT_DOUBLE_EQ(duration_of("50us", "us"), 50);
  EXPECT_DOUBLE_EQ(duration_of("50\u00b5s", "us"), 50);
  EXPECT_DOUBLE_EQ(duration_of("500ns", "us"), 0.5);
  EXPECT_DOUBLE_EQ(duration_of("2000", "us"), 2000);  // bare: the flag's own unit
  EXPECT_DOUBLE_EQ(duration_of(1.5, "s"), 1.5);
  EXPECT_THROW(duration_of("10parsecs", "s"), BadInput);
  EXPECT_THROW(duration_of("ms", "s"), BadInput);
  EXPECT_THROW(duration_of("-1s", "s"), BadInput);  // below lo = 0
}

TEST(ConfigBoolean, OneStyleWithAliases) {
  for (const char* yes : {"true", "on", "yes", "1"}) {
    const nlohmann::json cfg = {{"b", yes}};
    ConfigFields f(cfg);
    EXPECT_TRUE(f.boolean("b", false)) << yes;
  }
  for (const char* no : {"false", "off", "no", "0"}) {
    const nlohmann::json cfg = {{"b", no}};
    ConfigFields f(cfg);
    EXPECT_FALSE(f.boolean("b", true)) << no;
  }
  const nlohmann::json cfg = {{"b", "maybe"}};
  ConfigFields f(cfg);
  EXPECT_THROW(f.boolean("b", true), BadInput);
}

TEST(ConfigKeys, UnknownKeyGetsTheNearestKnown) {
  const nlohmann::json cfg = {{"bach", 4}};
  ConfigFields f(cfg);
  f.integer("batch", 1, 1, 100);
  try {
    f.reject_unknown();
    FAIL() << "bach accepted";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'batch'?"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpb
