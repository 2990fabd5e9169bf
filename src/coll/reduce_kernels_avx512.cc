// The kernels built for AVX-512 F/BW/VL/DQ: the loops of reduce_kernels_loops.h with 512-bit vectors, in
// two tables that differ in bfloat16 narrowing only. KernelIsa::kAvx512 narrows with integer operations;
// KernelIsa::kAvx512Bf16, for CPUs with AVX512_BF16, uses vcvtne2ps2bf16, about 1.6 times as fast here.
// That instruction flushes subnormal inputs to zero whatever MXCSR says, where floatToBf16 (half.h) rounds
// them like any other value, so a step that holds a subnormal takes the integer path instead (otherwise it
// is bit-identical: round to nearest even, NaN kept with its top payload bits and quieted).
//
// Compiled into every x86-64 GCC build; reduce_kernels.cc only calls into a table after checking the CPU,
// and nothing here runs before that (the tables are constant-initialised). The whole file is compiled with
// AVX512_BF16 enabled, but only Bf16x32Native uses it: GCC never emits bfloat16 instructions for the
// integer code of the other loops.
#include "coll/reduce_kernels_table.h"

#if PSDP_KERNELS_X86

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "coll/half.h"

#pragma GCC push_options
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands by self-initialisation, which
// -O3 reports as maybe-uninitialized (GCC bug 105593); the value is never read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 512-bit vectors for the loops GCC vectorises itself too (its generic tuning may prefer 256 bits).
#pragma GCC target("avx2,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,prefer-vector-width=512")

#include "coll/reduce_kernels_f16c.h"
#include "coll/reduce_kernels_loops.h"

namespace psdp::coll {
namespace {

// A plain GCC vector, like F32x8 (reduce_kernels_f16c.h): __m512 itself carries may_alias, which GCC drops
// (with a warning) from template arguments.
typedef float F32x16 __attribute__((vector_size(64)));

// Two 16-float vectors as one: elementwise ops on both halves (select is found by argument-dependent lookup
// from the ops of reduce_kernels_loops.h).
struct F32x32 {
  F32x16 lo, hi;
};
typedef int I32x16 __attribute__((vector_size(64)));
struct Mask32 {
  I32x16 lo, hi;
};
inline F32x32 operator+(F32x32 a, F32x32 b) {
  return {a.lo + b.lo, a.hi + b.hi};
}
inline F32x32 operator*(F32x32 a, F32x32 b) {
  return {a.lo * b.lo, a.hi * b.hi};
}
inline F32x32 operator/(F32x32 a, F32x32 b) {
  return {a.lo / b.lo, a.hi / b.hi};
}
inline Mask32 operator<(F32x32 a, F32x32 b) {
  return {a.lo < b.lo, a.hi < b.hi};
}
inline F32x32 select(F32x32 a, F32x32 b, Mask32 less) {
  return {less.lo ? a.lo : b.lo, less.hi ? a.hi : b.hi};
}

// 32 bfloat16 per step, widened by interleaving zero words below them (one unpack per 16 floats instead of a
// zero-extension and a shift). The unpacks work within 128-bit lanes, so lo holds elements 0-3, 8-11, 16-19
// and 24-27 and hi the others; elementwise ops do not care, and the narrowing below puts them back.
struct Bf16x32 {
  static constexpr size_t kCount = 32;
  using Vec = F32x32;
  static Vec broadcast(float x) { return {_mm512_set1_ps(x), _mm512_set1_ps(x)}; }
  static Vec load(const uint16_t* p) {
    __m512i x = _mm512_loadu_si512(p);
    return {_mm512_castsi512_ps(_mm512_unpacklo_epi16(_mm512_setzero_si512(), x)),
            _mm512_castsi512_ps(_mm512_unpackhi_epi16(_mm512_setzero_si512(), x))};
  }
  // floatToBf16 (half.h) lane by lane: round to nearest even in the integer domain, NaN kept and quieted.
  static __m512i narrow(F32x16 v) {
    __m512i bits = _mm512_castps_si512(v);
    __m512i high = _mm512_srli_epi32(bits, 16);
    __m512i bias = _mm512_add_epi32(_mm512_and_si512(high, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fff));
    __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, bias), 16);
    __mmask16 is_nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(rounded, is_nan, high, _mm512_set1_epi32(0x40));
  }
  // packus interleaves within 128-bit lanes exactly as the unpacks split, so the order comes back; every
  // lane is below 0x10000, so its unsigned saturation never applies.
  static void store(uint16_t* p, Vec v) { _mm512_storeu_si512(p, _mm512_packus_epi32(narrow(v.lo), narrow(v.hi))); }
};

struct Bf16x32Native : Bf16x32 {
  static void store(uint16_t* p, Vec v) {
    constexpr int kDenormal = 0x20;  // vfpclassps category: subnormal, either sign
    if ((_mm512_fpclass_ps_mask(v.lo, kDenormal) | _mm512_fpclass_ps_mask(v.hi, kDenormal)) != 0) {
      Bf16x32::store(p, v);
      return;
    }
    // Words 0-15 come from lo, 16-31 from hi; element 8k+m (m < 8) is lo[4k+m] or hi[4k+m-4].
    const __m512i order = _mm512_set_epi16(31, 30, 29, 28, 15, 14, 13, 12, 27, 26, 25, 24, 11, 10, 9, 8, 23, 22, 21, 20,
                                           7, 6, 5, 4, 19, 18, 17, 16, 3, 2, 1, 0);
    __m512i words = (__m512i)_mm512_cvtne2ps_pbh(v.hi, v.lo);
    _mm512_storeu_si512(p, _mm512_permutexvar_epi16(order, words));
  }
};

}  // namespace

// float16 goes 8 lanes at a time (Fp16x8, 256-bit), not 16: the conversions are the bottleneck and on AMD
// Zen 4 (which executes 512-bit operations as two halves) the 256-bit forms measured faster.
constinit const KernelFnTable kAvx512KernelFns = makeKernelFnTable<Fp16x8, Bf16x32>();
constinit const KernelFnTable kAvx512Bf16KernelFns = makeKernelFnTable<Fp16x8, Bf16x32Native>();

}  // namespace psdp::coll

#pragma GCC diagnostic pop
#pragma GCC pop_options

#endif  // PSDP_KERNELS_X86
