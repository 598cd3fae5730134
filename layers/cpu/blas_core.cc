// OpenBLAS core choice (blas_core.h). OpenBLAS 0.3.21 (DYNAMIC_ARCH) takes an Emerald Rapids
// (model 207) for a Prescott and runs SSE3 kernels: 1024^3 sgemm on one thread at 15-25
// GFLOP/s where OPENBLAS_CORETYPE=Cooperlake or SkylakeX gives 100-128 (Haswell 57-72). The
// probe takes its GEMM peak from that sgemm and prefill runs on it, so both were 4-6x low.
#include "layers/cpu/blas_core.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace tpb {

namespace {

constexpr const char* kCoreVar = "OPENBLAS_CORETYPE";

// The ISA of each old core, for the warning.
const char* old_core_isa(const std::string& core) {
  if (core == "Prescott") return "SSE3";
  if (core == "Core2" || core == "Atom") return "SSSE3";
  if (core == "Penryn" || core == "Dunnington") return "SSE4.1";
  if (core == "Nehalem") return "SSE4.2";
  return "";
}

// "OpenBLAS 0.3.21" from openblas_get_config()'s "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...".
std::string blas_version() {
  const std::string c = openblas_get_config();
  const std::size_t sp = c.find(' ');
  const std::size_t end = sp == std::string::npos ? sp : c.find(' ', sp + 1);
  return c.substr(0, end);
}

}  // namespace

CpuIsa detect_cpu_isa() {
  CpuIsa isa;
#if defined(__x86_64__) && defined(__GNUC__)
  isa.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  isa.avx512_skx = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  isa.avx512_bf16 = isa.avx512_skx && __builtin_cpu_supports("avx512bf16");
#endif
  return isa;
}

bool is_old_blas_core(const std::string& core) {
  return *old_core_isa(core) != '\0';
}

// The names are OpenBLAS's own (driver/others/dynamic.c); each was checked on 0.3.21: forced,
// openblas_get_corename() returns it. An unknown name is no test of that: 0.3.21 takes any
// unmatched name for its last entry, Cooperlake.
std::string blas_core_to_force(const std::string& corename, const CpuIsa& isa,
                               const char* env_value) {
  if (env_value != nullptr || !is_old_blas_core(corename)) return "";
  if (isa.avx512_bf16) return "Cooperlake";
  if (isa.avx512_skx) return "SkylakeX";
  if (isa.avx2_fma) return "Haswell";
  return "";
}

void reexec_with_blas_core(char** argv) {
  if (std::getenv(kBlasCoreForcedVar) != nullptr) return;  // this process is the re-exec
  const std::string old_core = openblas_get_corename();
  const std::string core = blas_core_to_force(old_core, detect_cpu_isa(), std::getenv(kCoreVar));
  if (core.empty()) return;
  setenv(kCoreVar, core.c_str(), 1);
  setenv(kBlasCoreForcedVar, old_core.c_str(), 1);
  execv("/proc/self/exe", argv);
  // Still here: run on as before, and let the warning say the old kernels run.
  std::cerr << "tpbench: re-exec with " << kCoreVar << "=" << core << " failed; running "
            << old_core << "'s kernels" << std::endl;
  unsetenv(kCoreVar);
  unsetenv(kBlasCoreForcedVar);
}

std::string blas_core_warning() {
  const std::string core = openblas_get_corename();
  const char* forced = std::getenv(kBlasCoreForcedVar);
  const char* set = std::getenv(kCoreVar);
  if (forced != nullptr && set != nullptr) {
    const std::string head = "blas_core_forced: " + blas_version() +
                             " does not recognise this CPU and would run its " + forced + " (" +
                             old_core_isa(forced) + ") kernels; tpbench set " + kCoreVar + "=" +
                             set + " for itself";
    if (core != set) return head + ", but OpenBLAS runs " + core + " (set " + kCoreVar + ")";
    return head + " (set " + kCoreVar + " to choose)";
  }
  if (!is_old_blas_core(core) || !detect_cpu_isa().avx2_fma) return "";
  return "blas_old_kernels: OpenBLAS runs its " + core +
         " kernels on a CPU with AVX2 (it does not recognise this model), so the probe's GEMM "
         "peak understates the core and MFU and roofline fractions against it read high; set "
         "OPENBLAS_CORETYPE (e.g. Haswell or SkylakeX) for peaks the CPU can reach";
}

}  // namespace tpb
