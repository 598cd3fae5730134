// TPB_CLONES: compile a hot CPU kernel twice, for x86-64-v3 (AVX2+FMA) and baseline, and let
// the loader pick; one binary runs anywhere yet uses the wide units where they exist.
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
#else
#define TPB_CLONES
#endif
