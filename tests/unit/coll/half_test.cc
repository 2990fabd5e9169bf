// The float16 and bfloat16 conversions, exhaustively over every 16-bit pattern: exact widening, and
// round-to-nearest-even narrowing checked at every midpoint between neighbours (the ties) and just off it.
#include "coll/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace psdp::coll {
namespace {

// Reference fp16 -> float by the definition: (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024.
float fp16Reference(uint16_t h) {
  int sign = (h >> 15) != 0 ? -1 : 1;
  int exponent = (h >> 10) & 0x1f;
  int mantissa = h & 0x3ff;
  if (exponent == 0x1f) {
    return mantissa == 0 ? static_cast<float>(sign) * std::numeric_limits<float>::infinity()
                         : std::numeric_limits<float>::quiet_NaN();
  }
  if (exponent == 0) return static_cast<float>(sign) * std::ldexp(static_cast<float>(mantissa), -24);
  return static_cast<float>(sign) * std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
}

TEST(HalfTest, Fp16WideningIsExactForEveryPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    float got = fp16ToFloat(static_cast<uint16_t>(h));
    float want = fp16Reference(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      // Widening keeps the sign and payload and makes the NaN quiet (as F16C does); narrowing back then
      // gives the pattern with its quiet bit set.
      uint32_t bits = std::bit_cast<uint32_t>(got);
      ASSERT_EQ(bits, (static_cast<uint32_t>(h & 0x8000) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13)) << std::hex << h;
      ASSERT_EQ(floatToFp16(got), h | 0x0200) << std::hex << h;
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << std::hex << h;
    // Every non-NaN pattern survives the round trip (including -0, subnormals and infinities).
    ASSERT_EQ(floatToFp16(got), h) << std::hex << h;
  }
}

TEST(HalfTest, Bf16RoundTripsEveryPatternAndKeepsNaN) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    auto bits = static_cast<uint16_t>(h);
    float f = bf16ToFloat(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(f), h << 16);
    if (std::isnan(f)) {
      uint16_t back = floatToBf16(f);
      ASSERT_TRUE(std::isnan(bf16ToFloat(back))) << std::hex << h;
      ASSERT_EQ(back & 0x8000, bits & 0x8000);
    } else {
      ASSERT_EQ(floatToBf16(f), bits) << std::hex << h;
    }
  }
}

// For each pair of neighbouring finite values lo < hi of the narrow type (positive and negative): the
// midpoint goes to the one with an even mantissa, and a float just inside either side to that side.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void checkTies(uint16_t largest_finite) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t lo = 0; lo < largest_finite; ++lo) {
      auto lo_bits = static_cast<uint16_t>(sign | lo);
      auto hi_bits = static_cast<uint16_t>(sign | (lo + 1));
      float a = Widen(lo_bits);
      float b = Widen(hi_bits);
      float mid = a + (b - a) / 2;  // exact (float has 13+ more mantissa bits), and no overflow near the top
      uint16_t even = (lo & 1) == 0 ? lo_bits : hi_bits;
      ASSERT_EQ(Narrow(mid), even) << std::hex << lo_bits;
      ASSERT_EQ(Narrow(std::nextafter(mid, a)), lo_bits) << std::hex << lo_bits;
      ASSERT_EQ(Narrow(std::nextafter(mid, b)), hi_bits) << std::hex << lo_bits;
    }
  }
}

TEST(HalfTest, Fp16RoundsToNearestEvenIncludingSubnormals) {
  checkTies<fp16ToFloat, floatToFp16>(0x7bff);
}

TEST(HalfTest, Bf16RoundsToNearestEven) {
  checkTies<bf16ToFloat, floatToBf16>(0x7f7f);
}

TEST(HalfTest, Fp16OverflowUnderflowAndSpecials) {
  EXPECT_EQ(floatToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToFp16(65519.996f), 0x7bff);
  EXPECT_EQ(floatToFp16(65520.0f), 0x7c00);  // the tie above the largest finite value rounds to infinity
  EXPECT_EQ(floatToFp16(1e10f), 0x7c00);
  EXPECT_EQ(floatToFp16(-1e10f), 0xfc00);
  EXPECT_EQ(floatToFp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToFp16(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(floatToFp16(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(floatToFp16(0x1p-25f), 0x0000);    // tie with zero goes to zero (even)
  EXPECT_EQ(floatToFp16(0x1.8p-25f), 0x0001);  // above the tie
  EXPECT_EQ(floatToFp16(-0x1p-26f), 0x8000);   // underflow keeps the sign
  EXPECT_EQ(floatToFp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToFp16(-0.0f), 0x8000);
  // A NaN keeps its sign and top payload bits and is forced quiet, as vcvtps2ph does.
  EXPECT_EQ(floatToFp16(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  EXPECT_EQ(floatToFp16(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  EXPECT_EQ(floatToFp16(std::bit_cast<float>(0x7f802001u)), 0x7e01);  // signalling, payload in the top bits
  EXPECT_EQ(floatToFp16(std::bit_cast<float>(0x7f800001u)), 0x7e00);  // payload below fp16's: still a NaN
  EXPECT_EQ(floatToFp16(std::bit_cast<float>(0xffffffffu)), 0xffff);
  EXPECT_TRUE(std::isinf(fp16ToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(fp16ToFloat(0x7e00)));
  EXPECT_EQ(fp16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16ToFloat(0x03ff), 0x3ffp-24f);  // largest subnormal
}

TEST(HalfTest, Bf16OverflowAndSpecials) {
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up past the largest finite
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  // A signalling NaN whose payload lives only in the low 16 bits must stay a NaN, not become infinity.
  float low_payload_nan = std::bit_cast<float>(0x7f800001u);
  ASSERT_TRUE(std::isnan(low_payload_nan));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(low_payload_nan))));
  EXPECT_EQ(floatToBf16(std::bit_cast<float>(0xffc12345u)), 0xffc1);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), floatToBf16(1.0f));  // tie, to even
}

}  // namespace
}  // namespace psdp::coll
