// Which OpenBLAS core a rank runs: where OpenBLAS does not recognise the CPU and falls back to
// an old core's kernels, tpbench names the newest core the CPU supports and re-execs itself
// with OPENBLAS_CORETYPE set, since OpenBLAS reads the variable once, in its constructor.
#pragma once
#include <string>

namespace tpb {

// The ISA levels that OpenBLAS's x86 cores need, as CPUID reports them.
struct CpuIsa {
  bool avx2_fma = false;     // Haswell
  bool avx512_skx = false;   // SkylakeX: AVX-512 F, BW, VL and DQ
  bool avx512_bf16 = false;  // Cooperlake: SkylakeX's set plus AVX512_BF16
};

CpuIsa detect_cpu_isa();

// True for the cores OpenBLAS falls back to on a CPU it does not know (SSE-only kernels).
bool is_old_blas_core(const std::string& core);

// The core to force, or "" to leave OpenBLAS's choice: only when the user has not set
// OPENBLAS_CORETYPE (env_value null; an empty value counts as set), OpenBLAS runs an old
// core, and the CPU has a newer ISA. Pure, so that every branch is unit-tested.
std::string blas_core_to_force(const std::string& corename, const CpuIsa& isa,
                               const char* env_value);

// Set by tpbench beside OPENBLAS_CORETYPE before its re-exec, to the core OpenBLAS chose
// first: how the warning tells tpbench's choice from the user's, and the guard against a loop.
inline constexpr const char* kBlasCoreForcedVar = "TPB_BLAS_CORE_FORCED";

// Call first in main(), before MPI_Init (a re-exec keeps the PID, so mpirun's launcher still
// knows the process). Returns if there is nothing to force or the exec failed; else does not
// return.
void reexec_with_blas_core(char** argv);

// The run's warning about the BLAS core: blas_core_forced where tpbench chose it,
// blas_old_kernels where an old core runs on a newer CPU anyway, else "".
std::string blas_core_warning();

}  // namespace tpb
