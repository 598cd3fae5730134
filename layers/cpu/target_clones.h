// TPB_CLONES: compile a hot CPU kernel twice, for x86-64-v3 (AVX2+FMA) and baseline, and let
// the loader pick; one binary runs anywhere yet uses the wide units where they exist.
// TPB_TARGET_V4: a kernel's AVX-512 variant, where its vector width differs from the clones'.
// Off under TSan: the clone's ifunc resolver runs during relocation, before the TSan runtime
// is up, and its instrumented entry crashes (gcc says __SANITIZE_THREAD__, clang __has_feature).
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TPB_NO_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TPB_NO_CLONES 1
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(TPB_NO_CLONES)
#define TPB_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
// An AVX-512 twin of a kernel, compiled for x86-64-v4 and called only after a CPUID check
// (tpb::cpu_has_x86_64_v4). Off with the clones, so the TSan build runs the generic path only.
#define TPB_HAVE_V4 1
#define TPB_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#else
#define TPB_CLONES
#endif

namespace tpb {

// x86-64-v4's AVX-512 subsets (F, BW, CD, DQ, VL), which code built for it may use.
inline bool cpu_has_x86_64_v4() {
#if defined(TPB_HAVE_V4)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

}  // namespace tpb
