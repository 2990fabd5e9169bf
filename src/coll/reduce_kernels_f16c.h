// 8-lane float16 conversions (F16C), shared by the AVX2 and AVX-512 kernel files. Include it after the
// file's `#pragma GCC target`, which must enable f16c and avx2: each includer compiles it for its own
// target, so it lives in an anonymous namespace and every file gets its own copy (an inline definition with
// external linkage would let the linker keep one target's code for both).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace psdp::coll {
namespace {

// A plain GCC vector: __m256 itself carries may_alias, which GCC drops (with a warning) from template
// arguments.
typedef float F32x8 __attribute__((vector_size(32)));

struct Fp16x8 {
  static constexpr size_t kCount = 8;
  using Vec = F32x8;
  static Vec broadcast(float x) { return _mm256_set1_ps(x); }
  // vcvtph2ps is exact, and quiets a signalling NaN as fp16ToFloat does.
  static Vec load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  // Round to nearest even whatever MXCSR says; NaN handling matches floatToFp16 (half.h).
  static void store(uint16_t* p, Vec v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

}  // namespace
}  // namespace psdp::coll
