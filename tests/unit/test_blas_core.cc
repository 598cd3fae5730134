// blas_core.h: which OpenBLAS core tpbench forces (every branch of the pure choice), that the
// names it forces are cores this OpenBLAS has (checked in a child process, since OpenBLAS
// reads OPENBLAS_CORETYPE only at load), and the warning each case records.
#include <cblas.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "layers/cpu/blas_core.h"

namespace tpb {
namespace {

constexpr CpuIsa kSse{};
constexpr CpuIsa kAvx2{true, false, false};
constexpr CpuIsa kSkx{true, true, false};
constexpr CpuIsa kBf16{true, true, true};

TEST(BlasCore, ForcesTheNewestCoreTheCpuSupports) {
  EXPECT_EQ(blas_core_to_force("Prescott", kBf16, nullptr), "Cooperlake");
  EXPECT_EQ(blas_core_to_force("Prescott", kSkx, nullptr), "SkylakeX");
  EXPECT_EQ(blas_core_to_force("Prescott", kAvx2, nullptr), "Haswell");
  EXPECT_EQ(blas_core_to_force("Prescott", kSse, nullptr), "");  // the old core is right
  for (const char* old : {"Core2", "Penryn", "Dunnington", "Nehalem", "Atom"})
    EXPECT_EQ(blas_core_to_force(old, kSkx, nullptr), "SkylakeX") << old;
}

TEST(BlasCore, LeavesARecognisedCoreAndTheUsersChoice) {
  for (const char* known : {"Haswell", "SkylakeX", "Cooperlake", "Zen", "Sandybridge"})
    EXPECT_EQ(blas_core_to_force(known, kBf16, nullptr), "") << known;
  EXPECT_EQ(blas_core_to_force("Prescott", kBf16, "Prescott"), "");
  EXPECT_EQ(blas_core_to_force("Prescott", kBf16, "Haswell"), "");
  // Set but empty is still the user's (0.3.21 happens to read it as Cooperlake).
  EXPECT_EQ(blas_core_to_force("Prescott", kBf16, ""), "");
}

std::string core_in_child(const std::string& coretype) {
  // A child process: OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded.
  const std::string cmd = "OPENBLAS_CORETYPE=" + coretype + " " TPB_PRINT_BLAS_CORE " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  pclose(p);
  const std::size_t at = out.find("blas_core=");
  return at == std::string::npos ? "no output" : out.substr(at + 10, out.find('\n', at) - at - 10);
}

// Each name tpbench may force, where this CPU supports it, is a core this OpenBLAS knows:
// forced, openblas_get_corename() returns it (an unknown name would read as Cooperlake).
TEST(BlasCore, ForcedNamesAreCoresOfThisOpenBlas) {
  const CpuIsa isa = detect_cpu_isa();
  if (!isa.avx2_fma) GTEST_SKIP() << "no AVX2: tpbench forces no core on this CPU";
  EXPECT_EQ(core_in_child("Haswell"), "Haswell");
  if (isa.avx512_skx) EXPECT_EQ(core_in_child("SkylakeX"), "SkylakeX");
  if (isa.avx512_bf16) EXPECT_EQ(core_in_child("Cooperlake"), "Cooperlake");
}

// Sets the two variables for one test and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(BlasCore, WarningSaysTpbenchForcedTheCore) {
  const std::string core = openblas_get_corename();  // the core this process really runs
  ScopedEnv set("OPENBLAS_CORETYPE", core.c_str());
  ScopedEnv forced(kBlasCoreForcedVar, "Prescott");
  const std::string w = blas_core_warning();
  // "OpenBLAS 0.3.21": the first two words of openblas_get_config().
  const std::string config = openblas_get_config();
  const std::string version = config.substr(0, config.find(' ', config.find(' ') + 1));
  EXPECT_EQ(w, "blas_core_forced: " + version +
                   " does not recognise this CPU and would run its Prescott (SSE3) kernels; "
                   "tpbench set OPENBLAS_CORETYPE=" +
                   core + " for itself (set OPENBLAS_CORETYPE to choose)");
}

TEST(BlasCore, WarningSaysWhenTheForcedCoreDidNotTake) {
  ScopedEnv set("OPENBLAS_CORETYPE", "NoSuchCore");
  ScopedEnv forced(kBlasCoreForcedVar, "Prescott");
  const std::string w = blas_core_warning();
  EXPECT_EQ(w.rfind("blas_core_forced: ", 0), 0u) << w;
  EXPECT_NE(w.find("OPENBLAS_CORETYPE=NoSuchCore for itself, but OpenBLAS runs " +
                   std::string(openblas_get_corename())),
            std::string::npos)
      << w;
}

}  // namespace
}  // namespace tpb
