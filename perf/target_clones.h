// PSDP_PERF_TARGET_CLONES: a plain loop compiled once per vector width (AVX-512, AVX2, SSE2), the widest the
// CPU has picked when the program loads, as a framework's kernels are built. Not under ThreadSanitizer: it
// instruments the clones' resolvers, which the loader runs before TSan's runtime is up, so they crash.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define PSDP_PERF_TARGET_CLONES
#else
#define PSDP_PERF_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
