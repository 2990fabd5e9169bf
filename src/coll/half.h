// IEEE binary16 (fp16) and bfloat16 <-> float conversions for the reduction kernels. Both directions are
// branch-free (selects only) so that GCC vectorises the kernel loops that call them, and neither depends on
// the FPU's denormal mode (FTZ/DAZ set by an application must not change results): fp16 subnormals are
// built from an exact integer-to-float conversion, and float -> fp16 only adds normal numbers.
#pragma once

#include <bit>
#include <cstdint>

namespace psdp::coll {

inline float bf16ToFloat(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// Round to nearest, ties to even. A NaN keeps its sign and top payload bits and is forced quiet, so that
// truncation can never turn it into an infinity.
inline uint16_t floatToBf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t nan = (bits >> 16) | 0x40u;
  bool is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<uint16_t>(is_nan ? nan : rounded);
}

inline float fp16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  // Normal: rebias the exponent (127 - 15). Inf/NaN: maximal exponent, mantissa (NaN payload) kept, and a
  // NaN forced quiet as F16C's vcvtph2ps does, so that the scalar and vector kernels agree bit for bit.
  uint32_t normal = (em << 13) + (112u << 23);
  uint32_t special = (em << 13) | 0x7f800000u | (em > 0x7c00u ? 0x00400000u : 0u);
  uint32_t bits = em >= 0x7c00u ? special : normal;
  // Subnormal (and zero): mantissa * 2^-24, exact.
  float subnormal = static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f;
  uint32_t magnitude = em < 0x400u ? std::bit_cast<uint32_t>(subnormal) : bits;
  return std::bit_cast<float>(sign | magnitude);
}

// Round to nearest, ties to even, with overflow to infinity and gradual underflow to fp16 subnormals. A NaN
// keeps its sign and top payload bits and is forced quiet, exactly as F16C's vcvtps2ph does (and as
// floatToBf16 does): the vector kernels use that instruction, and one NaN rule for both 16-bit types means
// a quiet NaN survives any number of widen/narrow round trips. The float additions do the rounding: adding
// a power of two whose ulp is the fp16 ulp at this magnitude leaves the rounded mantissa in the low bits
// (the method of Maratyszcza's FP16 library).
inline uint16_t floatToFp16(float f) {
  float base = (__builtin_fabsf(f) * 0x1p+112f) * 0x1p-110f;  // overflows to inf beyond the fp16 range
  uint32_t w = std::bit_cast<uint32_t>(f);
  uint32_t shl1_w = w + w;
  uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xff000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  uint32_t bits = std::bit_cast<uint32_t>(base);
  uint32_t exp_bits = (bits >> 13) & 0x00007c00u;
  uint32_t mantissa_bits = bits & 0x00000fffu;
  uint32_t nonsign = exp_bits + mantissa_bits;
  uint32_t nan = 0x7e00u | ((w >> 13) & 0x03ffu);
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? nan : nonsign));
}

}  // namespace psdp::coll
