// TPB_CLONES: compile a hot CPU kernel twice, for x86-64-v3 (AVX2+FMA) and baseline, and let
// the loader pick; one binary runs anywhere yet uses the wide units where they exist.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__)
#define TPB_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TPB_CLONES
#endif
