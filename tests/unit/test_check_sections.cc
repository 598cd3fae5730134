// The device check's section runner (tests/gpu/check_sections.h): a section that throws, as a
// cuDNN refusal or a CUDA error does, is that section's FAIL with its message; the sections
// after it run, and the verdict line device-check.sh reads says FAIL. Before it, one throw in
// tests/gpu/device_check.cc went to main's catch: the paged and FP8 sections never ran.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "tests/gpu/check_sections.h"

namespace tpb {
namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

TEST(CheckSections, AThrowingSectionFailsAndTheRestRun) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  CheckSections sections(out);
  bool paged_ran = false, fp8_ran = false;
  EXPECT_EQ(sections.run("[4] dense", [] { return 0; }), 0);
  EXPECT_EQ(
      sections.run("[4] llama-3.1-8b mixed step (paged)",
                   []() -> int {
                     throw std::runtime_error("cudnn sdpa: execute: CUDNN_STATUS_EXECUTION_FAILED");
                   }),
      1);
  sections.run("[4] timing", [&] {
    paged_ran = true;
    return 0;
  });
  sections.run("[5] fp8", [&] {
    fp8_ran = true;
    return 2;  // two shapes over tolerance
  });
  EXPECT_TRUE(paged_ran && fp8_ran);
  EXPECT_EQ(sections.failures(), 3);
  ASSERT_EQ(sections.thrown().size(), 1u);
  EXPECT_EQ(sections.thrown()[0],
            "[4] llama-3.1-8b mixed step (paged): cudnn sdpa: execute: "
            "CUDNN_STATUS_EXECUTION_FAILED");
  EXPECT_EQ(sections.verdict(),
            "device-check: FAIL (3 failures; 1 section stopped by an exception)");
  EXPECT_NE(read_all(out).find("  FAIL: [4] llama-3.1-8b mixed step (paged): cudnn sdpa: execute"),
            std::string::npos);
  std::fclose(out);
}

TEST(CheckSections, AThrowAloneIsAFailNotAPass) {
  CheckSections sections(stderr);
  sections.run("[1] clocks", []() -> int { throw 7; });
  EXPECT_EQ(sections.failures(), 1);
  EXPECT_EQ(sections.verdict().rfind("device-check: FAIL (1 failure;", 0), 0u);
  CheckSections clean(stderr);
  clean.run("[1] clocks", [] { return 0; });
  EXPECT_EQ(clean.verdict(), "device-check: PASS (0 failures)");
}

}  // namespace
}  // namespace tpb
