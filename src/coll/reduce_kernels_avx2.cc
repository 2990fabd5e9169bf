// The kernels built for AVX2 with F16C (KernelIsa::kAvx2): the loops of reduce_kernels_loops.h, with 8-lane
// float16/bfloat16 conversions. Compiled into every x86-64 GCC build; reduce_kernels.cc only calls into
// them after checking the CPU, and nothing here runs before that (the table is constant-initialised).
#include "coll/reduce_kernels_table.h"

#if PSDP_KERNELS_X86

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "coll/half.h"

#pragma GCC push_options
#pragma GCC target("avx2,f16c")

#include "coll/reduce_kernels_f16c.h"
#include "coll/reduce_kernels_loops.h"

namespace psdp::coll {
namespace {

struct Bf16x8 {
  static constexpr size_t kCount = 8;
  using Vec = F32x8;
  static Vec broadcast(float x) { return _mm256_set1_ps(x); }
  static Vec load(const uint16_t* p) {
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  // floatToBf16 (half.h) lane by lane: round to nearest even in the integer domain, NaN kept and quieted.
  static void store(uint16_t* p, Vec v) {
    __m256i bits = _mm256_castps_si256(v);
    __m256i high = _mm256_srli_epi32(bits, 16);
    __m256i bias = _mm256_add_epi32(_mm256_and_si256(high, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, bias), 16);
    __m256i nan = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i out = _mm256_blendv_epi8(rounded, nan, is_nan);
    // Every lane is below 0x10000, so the unsigned saturation of packus never applies.
    __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(out), _mm256_extracti128_si256(out, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
};

}  // namespace

constinit const KernelFnTable kAvx2KernelFns = makeKernelFnTable<Fp16x8, Bf16x8>();

}  // namespace psdp::coll

#pragma GCC pop_options

#endif  // PSDP_KERNELS_X86
